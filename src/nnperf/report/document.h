// A report as data (sections of paragraphs, tables and figures, all plain text) and its two
// renderings: Markdown and one self-contained HTML file. Every string that reaches either
// rendering is escaped here, once: names read from input files (kernel and layer names, paths,
// labels) show as text in both and run nothing. The HTML loads nothing from the network: styles
// and the table-sorting script are inline, figures are SVG files inlined as data: URIs in <img>
// elements (a script inside an SVG never runs from an <img>).
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace nnperf {

struct ReportTable {
  std::string caption;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> numeric;       // per column: right-aligned, sorted as numbers (empty: none)
  std::string note;                // units and method, under the table
  std::size_t markdown_rows = 25;  // Markdown shows the first rows only (HTML: all)
};

struct ReportFigure {
  std::string caption;  // what it shows, its unit and method
  std::filesystem::path svg;
};

struct ReportSection {
  std::string title;
  std::vector<std::string> paragraphs;       // plain text
  std::vector<std::string> recommendations;  // plain text, one per bullet
  std::vector<ReportTable> tables;
  std::vector<ReportFigure> figures;
};

struct ReportDocument {
  std::string title;
  std::vector<std::string> intro;  // plain text paragraphs
  std::vector<ReportSection> sections;
};

std::string html_escape(std::string_view text);
// Text safe inside Markdown (also inside a table cell): HTML special characters as entities,
// Markdown punctuation backslash-escaped, line breaks as spaces.
std::string markdown_escape(std::string_view text);
std::string base64(std::string_view bytes);

// `md_dir`: the folder report.md is written into (figure links are relative to it).
std::string render_markdown(const ReportDocument& doc, const std::filesystem::path& md_dir);
// A figure whose SVG cannot be read is replaced by a line saying so.
std::string render_html(const ReportDocument& doc);

}  // namespace nnperf
