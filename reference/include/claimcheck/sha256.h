#pragma once
#include <cstdint>
#include <string>

namespace claimcheck {
// Incremental SHA-256 (FIPS 180-4), for the data-revision record.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t n);
  void update(const std::string& s) { update(s.data(), s.size()); }
  std::string hex();  // finalises

 private:
  void block(const unsigned char* p);
  std::uint32_t h_[8];
  unsigned char buf_[64];
  std::size_t len_ = 0;
  std::uint64_t total_ = 0;
};
}  // namespace claimcheck
