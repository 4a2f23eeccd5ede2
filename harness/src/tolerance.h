// The tolerance engine: one rule for scalars and arrays,
//   |got - ref| <= atol + rtol * |ref|
// plus the forms a claim's stated figure needs: rounded to its stated digits,
// bounds, and bands relative to a value derived on the machine at hand.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace claimcheck {

struct Comparison {
  std::string rule;  // close | rounded | rounded_parts | truncated | bound | band | interval | equal
  double atol = 0, rtol = 0;
  double step = 0;                      // rounded / truncated: one unit of the last stated digit
  std::optional<double> min, max;       // bound
  std::string relative_to;              // band: a derived value's name, or "value" (the stated one)
  std::optional<double> lo, hi;         // band: lo <= measured / reference <= hi
  std::string dtype;                    // close: per-dtype defaults (fp64, fp32, fp16, bf16)
  std::string interval_lo, interval_hi;  // interval: derived values; the stated value must lie between them
  // rounded_parts: the series' own arithmetic: derived parts each rounded to part_step, added, the sum rounded to
  // step (the parts must add up to the measured figure)
  std::vector<std::string> parts;
  double part_step = 0;
  std::string why;                      // one line: why this tolerance
  std::string evidence;                 // optional: the measurements behind it (machines, dates, runs)
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
  std::string text;           // what was compared and how, one line
  double budget_used = 0;     // |error| / allowed (0..inf); for bounds, distance to the nearer edge
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
