// One lookup and one name rule for nnperf's tables of named things: the GEMM and convolution
// algorithms (the project's and cuDNN's), the activations, the models, the optimizers and the GPU's
// BatchNorm algorithms. A name finds the row whose name gives the same
// registry_key (lower case, without '_', '-' and spaces: "Leaky_ReLU", "leaky-relu" and
// "LeakyReLU" are one name; "Implicit-GEMM" is implicit_gemm), or the row an alias of the table
// stands for. Rows keep their own spelling, which is what outputs print.
#pragma once
#include <cctype>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace nnperf {

inline bool registry_separator(char c) { return c == '_' || c == '-' || c == ' '; }

inline std::string registry_key(std::string_view name) {
  std::string key;
  for (const char c : name) {
    if (registry_separator(c)) continue;
    key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return key;
}

// registry_key(a) == registry_key(b), without building either key.
inline bool same_registry_key(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  for (;;) {
    while (i < a.size() && registry_separator(a[i])) ++i;
    while (j < b.size() && registry_separator(b[j])) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[j]))) {
      return false;
    }
    ++i;
    ++j;
  }
}

// A row's name: its `name` member, or the row itself for a table of plain names.
template <class T>
std::string_view registry_row_name(const T& row) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return row;
  } else {
    return row.name;
  }
}

// Another name for a row: `alias` finds the row named `name`.
struct RegistryAlias {
  std::string_view alias, name;
};

// A view of a table of rows T, each with a `name` (const char* or std::string_view), or of plain
// names (T = const char*).
template <class T>
class Registry {
 public:
  constexpr explicit Registry(std::span<const T> rows, std::span<const RegistryAlias> aliases = {})
      : rows_(rows), aliases_(aliases) {}

  std::span<const T> rows() const { return rows_; }

  // The row `name` names (registry_key, then the aliases), or null.
  const T* find(std::string_view name) const {
    for (const RegistryAlias& a : aliases_) {
      if (same_registry_key(a.alias, name)) {
        name = a.name;
        break;
      }
    }
    for (const T& row : rows_) {
      if (same_registry_key(registry_row_name(row), name)) return &row;
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
      out += registry_row_name(row);
    }
    return out;
  }
  std::string names() const {
    return names([](const T&) { return true; });
  }
  // The names as a choice for an error message: "sgd or adam", "a, b or c".
  std::string alternatives() const {
    std::string out;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      if (i > 0) out += i + 1 == rows_.size() ? " or " : ", ";
      out += registry_row_name(rows_[i]);
    }
    return out;
  }

  // "" when every row and alias has a key of its own and every alias names a row; else what
  // clashes (each table's test checks it).
  std::string clash() const {
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (same_registry_key(registry_row_name(rows_[i]), registry_row_name(rows_[j]))) {
          return std::string(registry_row_name(rows_[j])) + " and " +
                 std::string(registry_row_name(rows_[i])) + " are one name";
        }
      }
    }
    for (std::size_t k = 0; k < aliases_.size(); ++k) {
      const RegistryAlias& a = aliases_[k];
      for (std::size_t l = 0; l < k; ++l) {
        if (same_registry_key(aliases_[l].alias, a.alias)) {
          return "alias " + std::string(a.alias) + " is given twice";
        }
      }
      bool names_a_row = false;
      for (const T& row : rows_) {
        if (same_registry_key(registry_row_name(row), a.alias)) {
          return "alias " + std::string(a.alias) + " is row " +
                 std::string(registry_row_name(row)) + "'s name";
        }
        names_a_row = names_a_row || same_registry_key(registry_row_name(row), a.name);
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
