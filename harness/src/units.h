// Units of stated and measured figures. A figure is compared in the stated unit;
// a measured figure in another unit of the same family is converted first.
#pragma once
#include <optional>
#include <string>

namespace claimcheck {

bool known_unit(const std::string& unit);
// value expressed in `from`, converted to `to`; nullopt when the units are not of one family.
std::optional<double> convert_unit(double value, const std::string& from, const std::string& to);
std::string known_units_list();

}  // namespace claimcheck
