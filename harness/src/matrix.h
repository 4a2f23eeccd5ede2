// claimcheck matrix REPORT.json... --out DIR: which of the series' claims hold on which machines. Rows are the
// claims (by chapter, with the series' sentence and figure), columns the machines (each headed by its card), a cell
// the verdict, the figure, the variant that applied and the machine's properties that chose it; per claim "holds on k
// of n", and where the verdicts differ, what separates them. Written as matrix.json (claimcheck.matrix/1,
// docs/matrix.schema.json), matrix.md and matrix.html.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace claimcheck {

inline constexpr const char* kMatrixSchema = "claimcheck.matrix/1";

// A report read for the matrix: the name it is given by (its path as typed) and the document, checked as compare
// checks it plus the records the matrix reads (records.hardware, records.commit.sha); throws InputError
// "<file>: field '<path>': <what>".
struct MatrixInput {
  std::string file;
  nlohmann::json report;
  std::string link;  // from the output folder to the machine's report (report.html beside it, else the JSON)
};
MatrixInput load_matrix_input(const std::filesystem::path& file, const std::filesystem::path& out_dir);
// The link from from_dir to the page of the report at report_json: report.html beside it where there is one, else
// the JSON (MatrixInput::link; the site's pages link so too).
std::string report_link(const std::filesystem::path& report_json, const std::filesystem::path& from_dir);
// o[key] as text: a string as it is, any other value as JSON, "" where it is missing or null.
std::string matrix_text(const nlohmann::json& o, const char* key);

// The matrix of `inputs` (at least one). Two reports of the same machine and commit are bad input (InputError
// naming the second file).
nlohmann::json build_matrix(const std::vector<MatrixInput>& inputs);

std::string matrix_markdown(const nlohmann::json& m);
// The README's headline table (headline.md): per chapter, how many claims hold on every machine, are refuted, differ.
std::string matrix_headline_markdown(const nlohmann::json& m);
std::string matrix_html(const nlohmann::json& m);  // matrix_html.cpp

// What tells two machines apart in a report's records.hardware (CPU, its model numbers and microarchitecture, the
// CPUs, the GPU; not the commit, not the day).
std::string matrix_machine_key(const nlohmann::json& hardware);
// "Zen 4 · 2 CPUs" and the like: the column heading of a report's machine.
std::string machine_label(const nlohmann::json& hardware);
// The texts the Markdown and HTML share: "holds on k of n", a cell ("pass 12 MB [value when isa:…]"), a card.
std::string matrix_holds_text(const nlohmann::json& row);
std::string matrix_cell_text(const nlohmann::json& cell);
std::string matrix_figure_text(const nlohmann::json& cell);  // "12 MB", "—" where it measured none
std::string matrix_card_text(const nlohmann::json& machine);

}  // namespace claimcheck
