// claimcheck site HISTORY --out DIR: the published history of every machine's reports as a static site (issue 36,
// point 3). HISTORY is what the CPU workflow and the nightly GPU job append to (the gh-pages branch: one folder per
// machine, one per run, each with its report.json and report.html; ci/publish-history.sh); every report.json under it
// is read (at most four folders deep) and grouped by the machine its records name. The site:
//   index.html, matrix.{json,md}  the matrix of each machine's latest report (claimcheck matrix), and a link to each
//                                 machine's timelines
//   machines/<slug>.html          per machine: a timeline per claim (its figure against the runs, oldest first, each
//                                 point coloured by its verdict and linking to that run's report row) and per
//                                 benchmark (its ratio); a ring marks a run where `claimcheck compare` against the run
//                                 before finds a move: a verdict changed or a hatch opened, a figure left or re-entered
//                                 its tolerance, a benchmark slower or faster beyond its noise (the U test)
//   site.json                     the same data (claimcheck.site/1)
// Static: the links are relative and no script fetches a file, so the site opens from file:// as from a server.
#pragma once
#include <filesystem>

#include <nlohmann/json.hpp>

namespace claimcheck {

inline constexpr const char* kSiteSchema = "claimcheck.site/1";

// Reads HISTORY, writes the site into out (created; its files replaced together) and returns site.json's document.
// Bad input (HISTORY missing or holding no report.json, a report that is not one) throws InputError naming the file
// and the field.
nlohmann::json write_site(const std::filesystem::path& history, const std::filesystem::path& out);

}  // namespace claimcheck
