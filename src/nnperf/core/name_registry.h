// One lookup and one name rule for nnperf's tables of named things: the GEMM and convolution
// algorithms, the activations and the models. A name finds the row whose name gives the same
// registry_key (lower case, without '_', '-' and spaces: "Leaky_ReLU", "leaky-relu" and
// "LeakyReLU" are one name; "Implicit-GEMM" is implicit_gemm), or the row an alias of the table
// stands for. Rows keep their own spelling, which is what outputs print.
#pragma once
#include <cctype>
#include <span>
#include <string>
#include <string_view>

namespace nnperf {

inline std::string registry_key(std::string_view name) {
  std::string key;
  for (const char c : name) {
    if (c == '_' || c == '-' || c == ' ') continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

// Another name for a row: `alias` finds the row named `name`.
struct RegistryAlias {
  std::string_view alias, name;
};

// A view of a table of rows T, each with a `name` (const char* or std::string_view).
template <class T>
class Registry {
 public:
  constexpr explicit Registry(std::span<const T> rows, std::span<const RegistryAlias> aliases = {})
      : rows_(rows), aliases_(aliases) {}

  std::span<const T> rows() const { return rows_; }

  // The row `name` names (registry_key, then the aliases), or null.
  const T* find(std::string_view name) const {
    std::string key = registry_key(name);
    for (const RegistryAlias& a : aliases_) {
      if (registry_key(a.alias) == key) key = registry_key(a.name);
    }
    for (const T& row : rows_) {
      if (registry_key(row.name) == key) return &row;
    }
    return nullptr;
  }

  // The names of the rows `keep` accepts, comma-separated, in table order.
  template <class Keep>
  std::string names(Keep keep) const {
    std::string out;
    for (const T& row : rows_) {
      if (!keep(row)) continue;
      if (!out.empty()) out += ", ";
      out += row.name;
    }
    return out;
  }
  std::string names() const {
    return names([](const T&) { return true; });
  }

  // "" when every row and alias has a key of its own and every alias names a row; else what
  // clashes (each table's test checks it).
  std::string clash() const {
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (registry_key(rows_[i].name) == registry_key(rows_[j].name)) {
          return std::string(rows_[j].name) + " and " + rows_[i].name + " are one name";
        }
      }
    }
    for (const RegistryAlias& a : aliases_) {
      bool names_a_row = false;
      for (const T& row : rows_) {
        if (registry_key(row.name) == registry_key(a.alias)) {
          return "alias " + std::string(a.alias) + " is row " + row.name + "'s name";
        }
        names_a_row = names_a_row || registry_key(row.name) == registry_key(a.name);
      }
      if (!names_a_row) return "alias " + std::string(a.alias) + " names no row";
    }
    return "";
  }

 private:
  std::span<const T> rows_;
  std::span<const RegistryAlias> aliases_;
};

}  // namespace nnperf
