#include "tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace claimcheck {

std::string fmt(double v) {
  char buf[64];
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 1e-3 && std::fabs(v) < 1e7) {
    std::snprintf(buf, sizeof buf, "%.6g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

Tol dtype_default(const std::string& dtype) {
  // torch.testing.assert_close defaults (rtol, atol) → here (atol, rtol).
  if (dtype == "fp64") return {1e-7, 1e-7};
  if (dtype == "fp32") return {1e-5, 1.3e-6};
  if (dtype == "fp16") return {1e-5, 1e-3};
  if (dtype == "bf16") return {1e-5, 1.6e-2};
  throw std::invalid_argument("unknown dtype '" + dtype + "' (fp64, fp32, fp16, bf16)");
}

namespace {
std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", share * 100);
  return buf;
}
}  // namespace

namespace {
// How much of a range [min, max] (either end may be open) the figure x uses: 1 at an edge, above 1 outside.
double range_share(double x, const std::optional<double>& min, const std::optional<double>& max, bool ok) {
  if (min && max) {
    const double half = (*max - *min) / 2;
    return half > 0 ? std::fabs(x - (*min + *max) / 2) / half : (ok ? 0 : INFINITY);
  }
  if (max && *max > 0 && x >= 0) return x / *max;
  if (min && *min >= 0 && x > 0) return *min / x;
  return ok ? 0 : INFINITY;
}

std::string range_text(const std::optional<double>& min, const std::optional<double>& max) {
  return "[" + (min ? fmt(*min) : std::string("-inf")) + ", " + (max ? fmt(*max) : std::string("inf")) + "]";
}

struct Judge {
  double m, v;
  const std::map<std::string, double>& derived;
  std::string u;

  Verdict close_to(double allowed, const std::string& how) const {
    Verdict out;
    const double err = std::fabs(m - v);
    // A hair of slack for the binary representation of decimal steps (0.05 is not exact).
    out.ok = err <= allowed * (1 + 1e-12) + 1e-300;
    out.budget_used = allowed > 0 ? err / allowed : (err == 0 ? 0 : INFINITY);
    out.text = fmt(m) + u + " vs stated " + fmt(v) + u + ": |diff| " + fmt(err) + (out.ok ? " <= " : " > ") +
               fmt(allowed) + " (" + how + "; " + pct(out.budget_used) + " of budget)";
    out.against = fmt(v) + u + " ± " + fmt(allowed);
    out.accept_lo = v - allowed;
    out.accept_hi = v + allowed;
    return out;
  }
  Verdict operator()(const rule::Close& c) const {
    Tol t{c.atol, c.rtol};
    if (!c.dtype.empty()) t = dtype_default(c.dtype);
    return close_to(t.atol + t.rtol * std::fabs(v), "atol " + fmt(t.atol) + ", rtol " + fmt(t.rtol));
  }
  Verdict operator()(const rule::Rounded& c) const { return close_to(c.step / 2, "stated to " + fmt(c.step) + u); }
  Verdict operator()(const rule::Truncated& c) const {
    Verdict out;
    out.ok = m >= v && m < v + c.step;
    out.budget_used = c.step > 0 ? std::fabs(m - v) / c.step : 0;
    out.text =
        fmt(m) + u + (out.ok ? " truncates to " : " does not truncate to ") + fmt(v) + u + " at step " + fmt(c.step);
    out.against = "[" + fmt(v) + ", " + fmt(v + c.step) + ")" + u;
    out.accept_lo = v;
    out.accept_hi = v + c.step;
    return out;
  }
  Verdict operator()(const rule::Bound& c) const {
    Verdict out;
    out.ok = (!c.min || m >= *c.min) && (!c.max || m <= *c.max);
    out.budget_used = range_share(m, c.min, c.max, out.ok);
    std::string range;
    if (c.min && c.max)
      range = (out.ok ? " within " : " outside ") + range_text(c.min, c.max) + u;
    else if (c.max)
      range = (out.ok ? " <= " : " > ") + fmt(*c.max) + u;
    else
      range = (out.ok ? " >= " : " < ") + fmt(*c.min) + u;
    out.text = fmt(m) + u + range + " (stated " + fmt(v) + u + ")";
    out.against = c.min && c.max ? range_text(c.min, c.max) + u
                  : c.max        ? "≤ " + fmt(*c.max) + u
                                 : "≥ " + fmt(*c.min) + u;
    out.accept_lo = c.min ? *c.min : -INFINITY;
    out.accept_hi = c.max ? *c.max : INFINITY;
    return out;
  }
  Verdict operator()(const rule::Band& c) const {
    Verdict out;
    double ref = v;
    std::string refname = "stated";
    if (c.relative_to != "value") {
      auto it = derived.find(c.relative_to);
      if (it == derived.end()) {
        out.judged = false;
        out.text = "band is relative to '" + c.relative_to + "', which the check did not derive";
        return out;
      }
      ref = it->second;
      refname = c.relative_to;
    }
    const double ratio = m / ref;
    out.ok = std::isfinite(ratio) && (!c.min || ratio >= *c.min) && (!c.max || ratio <= *c.max);
    out.budget_used = std::isfinite(ratio) ? range_share(ratio, c.min, c.max, out.ok) : INFINITY;
    out.text =
        fmt(m) + u + " is " + fmt(ratio) + "x " + refname + " (" + fmt(ref) + u + "); band " + range_text(c.min, c.max);
    const std::optional<double> lo = c.min ? std::optional<double>(*c.min * ref) : std::nullopt;
    const std::optional<double> hi = c.max ? std::optional<double>(*c.max * ref) : std::nullopt;
    out.against =
        range_text(lo, hi) + u + " = " + range_text(c.min, c.max) + " × " + refname + " (" + fmt(ref) + u + ")";
    if (std::isfinite(ref) && ref > 0) {
      out.accept_lo = lo ? *lo : -INFINITY;
      out.accept_hi = hi ? *hi : INFINITY;
    }
    return out;
  }
  Verdict operator()(const rule::RoundedParts& c) const {
    // The series adds parts it has already rounded: the stated figure is what that arithmetic gives, not a wider
    // tolerance. The parts must add up to the measured figure, or the rule would judge something else.
    Verdict out;
    const auto to_step = [](double x, double step) { return std::round(x / step * (1 + 1e-12)) * step; };
    double raw = 0, rounded = 0;
    std::string shown;
    for (const auto& name : c.parts) {
      const auto it = derived.find(name);
      if (it == derived.end()) {
        out.judged = false;
        out.text = "rounded_parts needs '" + name + "', which the check did not derive";
        return out;
      }
      raw += it->second;
      rounded += to_step(it->second, c.part_step);
      shown += (shown.empty() ? "" : " + ") + fmt(to_step(it->second, c.part_step));
    }
    const double sum = to_step(rounded, c.step);
    const bool adds_up = std::fabs(raw - m) <= 1e-9 * std::max(1.0, std::fabs(m));
    out.ok = adds_up && std::fabs(sum - v) < c.step / 2;
    out.budget_used = c.step / 2 > 0 ? std::fabs(sum - v) / (c.step / 2) : (sum == v ? 0 : INFINITY);
    out.text = adds_up
                   ? fmt(m) + u + " exactly; the parts rounded to " + fmt(c.part_step) + " (" + shown + " = " +
                         fmt(rounded) + ") give " + fmt(sum) + u + (out.ok ? " as stated" : ", stated " + fmt(v) + u)
                   : "the parts add up to " + fmt(raw) + u + ", not to the measured " + fmt(m) + u;
    out.against = fmt(v) + u + " (the parts rounded to " + fmt(c.part_step) + ", the sum to " + fmt(c.step) + ")";
    return out;
  }
  Verdict operator()(const rule::Interval& c) const {
    // The measurement's own uncertainty (e.g. a bootstrap interval) is the tolerance: the stated figure must lie in it.
    Verdict out;
    const auto lo = derived.find(c.min_from), hi = derived.find(c.max_from);
    if (lo == derived.end() || hi == derived.end()) {
      out.judged = false;
      out.text = "interval needs '" + c.min_from + "' and '" + c.max_from + "', which the check did not derive";
      return out;
    }
    const double a = lo->second, b = hi->second;
    out.ok = std::isfinite(a) && std::isfinite(b) && a <= v && v <= b;
    out.budget_used = range_share(v, a, b, out.ok);
    out.text = "stated " + fmt(v) + u + (out.ok ? " inside " : " outside ") + "the measured interval [" + fmt(a) +
               ", " + fmt(b) + "]" + u + " (estimate " + fmt(m) + u + ")";
    out.against = "the stated " + fmt(v) + u + " inside the measured interval";
    return out;
  }
  Verdict operator()(const rule::Equal&) const {
    Verdict out;
    out.ok = m == v;
    out.text = fmt(m) + u + (out.ok ? " == " : " != ") + "stated " + fmt(v) + u;
    out.against = fmt(v) + u;
    out.accept_lo = out.accept_hi = v;
    return out;
  }
};
}  // namespace

const char* rule_name(const Rule& r) {
  static const char* const names[] = {"close", "rounded",  "truncated",     "bound",
                                      "band",  "interval", "rounded_parts", "equal"};
  static_assert(std::variant_size_v<Rule> == sizeof names / sizeof names[0], "a name per rule");
  return names[r.index()];
}

Verdict compare_scalar(const Comparison& c, double m, double v, const std::map<std::string, double>& derived,
                       const std::string& unit) {
  if (!std::isfinite(m)) {
    Verdict out;
    out.text = "measured " + fmt(m) + (unit.empty() ? "" : " " + unit) + " is not a finite number";
    out.budget_used = INFINITY;
    return out;
  }
  return std::visit(Judge{m, v, derived, unit.empty() ? "" : " " + unit}, c.rule);
}

namespace {
template <typename T>
ArrayVerdict compare_impl(const T* got, const double* ref, std::size_t n, Tol tol) {
  ArrayVerdict a;
  a.n = n;
  double worst_share = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]);
    const double r = ref[i];
    const double allowed = tol.atol + tol.rtol * std::fabs(r);
    double err = std::fabs(g - r);
    if (!std::isfinite(g) && std::isfinite(r)) {
      a.nonfinite = true;
      err = INFINITY;
    }
    const double share = allowed > 0 ? err / allowed : (err == 0 ? 0 : INFINITY);
    if (err > allowed || std::isnan(err)) ++a.violations;
    if (std::isfinite(err) && err > a.max_abs_error) a.max_abs_error = err;
    if (share > worst_share || std::isnan(share)) {
      worst_share = std::isnan(share) ? INFINITY : share;
      a.worst_index = i;
      a.worst_got = g;
      a.worst_ref = r;
      a.worst_allowed = allowed;
    }
  }
  a.budget_used = n ? worst_share : 0;
  a.ok = a.violations == 0;
  if (a.nonfinite) a.max_abs_error = INFINITY;
  return a;
}
}  // namespace

ArrayVerdict compare_arrays(const float* got, const double* ref, std::size_t n, Tol tol) {
  return compare_impl(got, ref, n, tol);
}
ArrayVerdict compare_arrays(const double* got, const double* ref, std::size_t n, Tol tol) {
  return compare_impl(got, ref, n, tol);
}

std::string ArrayVerdict::text() const {
  std::string s = std::to_string(violations) + " of " + std::to_string(n) + " elements out of tolerance; max |err| " +
                  fmt(max_abs_error) + "; worst at [" + std::to_string(worst_index) + "]: got " + fmt(worst_got) +
                  ", ref " + fmt(worst_ref) + ", allowed " + fmt(worst_allowed) + " (" + pct(budget_used) +
                  " of budget)";
  if (nonfinite) s += "; non-finite output";
  return s;
}

std::string basis_label(const std::string& basis) {
  if (basis.empty()) return "";
  if (basis == "definition") return "by definition";
  if (basis == "arithmetic") return "the series' arithmetic";
  if (basis == "read_back") return "read back";
  if (basis == "self_check") return "the harness's self-check";
  throw std::invalid_argument("'" + basis + "' is not one of definition, arithmetic, read_back, self_check");
}

}  // namespace claimcheck
