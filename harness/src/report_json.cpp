// report.json: the report document itself (report_to_json in report.cpp), indented, as `compare` reads it back.
#include "report_writers.h"

namespace claimcheck {

std::string JsonWriter::filename() const { return "report.json"; }
std::string JsonWriter::render(const Report& r) const { return report_to_json(r).dump(2) + "\n"; }

}  // namespace claimcheck
