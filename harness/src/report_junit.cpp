// junit.xml: one testsuite per chapter, one testcase per claim, for CI dashboards: fail and xpass are failures, error
// an error, skip and xfail skipped (JUnit has no expected failure).
#include <sstream>

#include "report_writers.h"

namespace claimcheck {

std::string JunitWriter::filename() const { return "junit.xml"; }

std::string JunitWriter::render(const Report& r) const {
  const Summary s = summarize(r.claims);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << "<testsuites name=\"claimcheck\" tests=\"" << s.total << "\" failures=\"" << s[Status::fail] + s[Status::xpass]
    << "\" errors=\"" << s[Status::error] << "\" skipped=\"" << s[Status::skip] + s[Status::xfail] + s[Status::partial]
    << "\">\n";
  for (const auto& [ch, claims] : by_chapter(r)) {
    int f = 0, e = 0, sk = 0;
    for (const auto* c : claims) {
      f += c->status == Status::fail || c->status == Status::xpass;
      e += c->status == Status::error;
      sk += c->status == Status::skip || c->status == Status::xfail || c->status == Status::partial;
    }
    o << "  <testsuite name=\"" << ch << "\" tests=\"" << claims.size() << "\" failures=\"" << f << "\" errors=\"" << e
      << "\" skipped=\"" << sk << "\">\n";
    for (const auto* c : claims) {
      o << "    <testcase classname=\"claimcheck." << ch << "\" name=\"" << html_escape(c->id) << "\" time=\""
        << c->seconds << "\">";
      const std::string msg = html_escape(c->reason);
      switch (c->status) {
        case Status::pass:
          break;
        case Status::fail:
          o << "<failure message=\"" << msg << "\"/>";
          break;
        case Status::xpass:
          o << "<failure message=\"unexpected pass: " << msg << "\"/>";
          break;
        case Status::error:
          o << "<error message=\"" << msg << "\"/>";
          break;
        // JUnit has no expected failure: an xfail is reported as skipped, never as a pass.
        case Status::xfail:
          o << "<skipped message=\"xfail: " << msg << "\"/>";
          break;
        case Status::skip:
          o << "<skipped message=\"" << msg << "\"/>";
          break;
        // Partly judged: what held is no pass of the whole claim.
        case Status::partial:
          o << "<skipped message=\"partial: " << msg << "\"/>";
          break;
      }
      o << "</testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

}  // namespace claimcheck
