// The tolerance engine: one rule for scalars and arrays,
//   |got - ref| <= atol + rtol * |ref|
// plus the forms a claim's stated figure needs: rounded to its stated digits,
// bounds, and bands relative to a value derived on the machine at hand.
#pragma once
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace claimcheck {

// One typed rule per way of comparing a figure (expected/schema.json spells each): a comparison holds exactly the
// fields its rule uses, and the loader builds it from the expected file's "compare" object.
namespace rule {
struct Close {        // |measured - stated| <= atol + rtol * |stated|, or the dtype's defaults
  std::string dtype;  // fp64, fp32, fp16, bf16 (PyTorch's assert_close defaults); "" for atol / rtol
  double atol = 0, rtol = 0;
};
struct Rounded {    // the measured figure rounds to the stated one at the stated digit
  double step = 0;  // one unit of the last stated digit
};
struct Truncated {  // the measured figure truncates to the stated one
  double step = 0;
};
struct Bound {  // min <= measured <= max (either may be absent)
  std::optional<double> min, max;
};
struct Band {               // min <= measured / reference <= max
  std::string relative_to;  // a value the check derived on this machine, or "value" (the stated one)
  std::optional<double> min, max;
};
struct Interval {  // the stated value lies in [min_from, max_from], values the check derived (its own noise)
  std::string min_from, max_from;
};
struct RoundedParts {  // the series' own arithmetic: derived parts each rounded to part_step, added, rounded to step
  double step = 0, part_step = 0;
  std::vector<std::string> parts;  // the parts must add up to the measured figure
};
struct Equal {};  // measured == stated (booleans, counts)
}  // namespace rule
using Rule = std::variant<rule::Close, rule::Rounded, rule::Truncated, rule::Bound, rule::Band, rule::Interval,
                          rule::RoundedParts, rule::Equal>;
// The name an expected file gives the rule: close, rounded, truncated, bound, band, interval, rounded_parts, equal.
const char* rule_name(const Rule& r);

struct Comparison {
  Rule rule = rule::Equal{};
  std::string why;       // one line: why this tolerance
  std::string evidence;  // optional: the measurements behind it (machines, dates, runs)
  // optional: what kind of figure this statement compares where no bug in a model or a kernel can move it (it
  // cannot fail from one, so the report labels it): "definition" (holds by construction: a sum of dtype sizes, a
  // ratio whose terms cancel), "arithmetic" (the series' own arithmetic redone), "read_back" (a value read from a
  // public file), "self_check" (the harness checking its own records). Absent: a computed or measured figure.
  std::string basis;
};
// The label the report prints for a basis ("" for none); throws std::invalid_argument for an unknown one.
std::string basis_label(const std::string& basis);

struct Tol {
  double atol, rtol;
};
// PyTorch's assert_close defaults. Throws std::invalid_argument for an unknown dtype.
Tol dtype_default(const std::string& dtype);

struct Verdict {
  bool ok = false;
  bool judged = true;      // false: the rule could not be evaluated (a figure it needs was not derived): an error,
                           // never a failure (an expected failure would read it as the refutation)
  std::string text;        // what was compared and how, one line
  std::string against;     // what the figure was held to, in its unit ("4.8 ms +- 0.05", "14-26 ms: 0.8-1.8x
                           // bytes_over_bandwidth"): the report's "held to" cell, not the series' figure
  double budget_used = 0;  // the share of the tolerance used: 1 at its edge, above 1 outside (0..inf); for a
                           // range, the distance from its centre over its half-width; one-sided, x / max or min / x
  // The measured values the rule accepts, in the stated unit (the report draws them on a chart of that figure):
  // -inf / +inf for an open end; NaN where the rule judges something else (the stated figure inside a measured
  // interval, the series' rounded parts).
  double accept_lo = NAN, accept_hi = NAN;
};

// `stated` is the expected file's value in the same unit as `measured`.
// `derived` holds values the check derived on this machine (for band rules).
Verdict compare_scalar(const Comparison& c, double measured, double stated,
                       const std::map<std::string, double>& derived, const std::string& unit);

// Elementwise comparison for kernels: how many elements broke the rule, the worst one,
// and the share of the budget it used.
struct ArrayVerdict {
  bool ok = true;
  std::size_t n = 0, violations = 0, worst_index = 0;
  double worst_got = 0, worst_ref = 0, worst_allowed = 0;
  double max_abs_error = 0, budget_used = 0;
  bool nonfinite = false;  // NaN/Inf where the reference is finite
  std::string text() const;
};
ArrayVerdict compare_arrays(const float* got, const double* ref, std::size_t n, Tol tol);
ArrayVerdict compare_arrays(const double* got, const double* ref, std::size_t n, Tol tol);

std::string fmt(double v);  // shortest readable form: 128.48, 4.794e-3, 8030261248

}  // namespace claimcheck
