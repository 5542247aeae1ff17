#include "nnperf/report/document.h"

#include <fmt/format.h>

#include <algorithm>

#include "nnperf/io/files.h"

namespace nnperf {

namespace fs = std::filesystem;

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' ? ' ' : c;
    }
  }
  return out;
}

std::string markdown_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '#':
      case '!':
        out += '\\';
        out += c;
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

std::string base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 |
                       static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

namespace {

std::string md_table(const ReportTable& t) {
  std::string out;
  if (!t.caption.empty()) out += fmt::format("**{}**\n\n", markdown_escape(t.caption));
  out += "|";
  for (const auto& h : t.header) out += fmt::format(" {} |", markdown_escape(h));
  out += "\n|";
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    out += c < t.numeric.size() && t.numeric[c] ? "---:|" : "---|";
  }
  out += "\n";
  const std::size_t shown = std::min(t.rows.size(), t.markdown_rows);
  for (std::size_t r = 0; r < shown; ++r) {
    out += "|";
    for (const auto& cell : t.rows[r]) out += fmt::format(" {} |", markdown_escape(cell));
    out += "\n";
  }
  if (shown < t.rows.size()) {
    out += fmt::format("\n({} of {} rows shown; report.html has them all)\n", shown, t.rows.size());
  }
  if (!t.note.empty()) out += fmt::format("\n{}\n", markdown_escape(t.note));
  return out + "\n";
}

constexpr std::string_view kStyle = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1b1b1b;background:#fff}
h1{font-size:1.7em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.88em}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2;cursor:pointer;user-select:none}th.num,td.num{text-align:right;font-variant-numeric:tabular-nums}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
caption{text-align:left;font-weight:600;padding:.3em 0}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}figcaption{font-size:.9em;color:#444}
.note{font-size:.85em;color:#555}.recs li{margin:.2em 0}.missing{color:#a00}
.scroll{max-height:36em;overflow:auto}
)";

// Click a header to sort by it (numbers as numbers, empty cells last); on load, count the figures
// that decoded, for the headless-browser check (data-figures / data-figures-loaded on <body>).
constexpr std::string_view kScript = R"(
(function(){
  function key(td,num){var v=td?td.getAttribute('data-v'):null;if(v===null&&td)v=td.textContent;
    if(num){var x=parseFloat(v);return isNaN(x)?null:x;}return v===''?null:v;}
  document.querySelectorAll('table.sortable').forEach(function(table){
    table.querySelectorAll('th').forEach(function(th,col){
      th.addEventListener('click',function(){
        var num=th.classList.contains('num');var asc=th.getAttribute('aria-sort')!=='ascending';
        table.querySelectorAll('th').forEach(function(o){o.removeAttribute('aria-sort');});
        th.setAttribute('aria-sort',asc?'ascending':'descending');
        var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){var x=key(a.cells[col],num),y=key(b.cells[col],num);
          if(x===null)return y===null?0:1;if(y===null)return -1;
          var r=num?x-y:String(x).localeCompare(String(y));return asc?r:-r;});
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
  window.addEventListener('load',function(){
    var imgs=document.querySelectorAll('figure img');var ok=0;
    imgs.forEach(function(i){if(i.complete&&i.naturalWidth>0)ok++;});
    document.body.setAttribute('data-figures',String(imgs.length));
    document.body.setAttribute('data-figures-loaded',String(ok));
  });
})();
)";

std::string html_table(const ReportTable& t) {
  std::string out = "<div class=\"scroll\"><table class=\"sortable\">";
  if (!t.caption.empty()) out += fmt::format("<caption>{}</caption>", html_escape(t.caption));
  out += "<thead><tr>";
  for (std::size_t c = 0; c < t.header.size(); ++c) {
    const bool num = c < t.numeric.size() && t.numeric[c];
    out += fmt::format("<th{}>{}</th>", num ? " class=\"num\"" : "", html_escape(t.header[c]));
  }
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c) {
      const bool num = c < t.numeric.size() && t.numeric[c];
      out += fmt::format("<td{}>{}</td>", num ? " class=\"num\"" : "", html_escape(row[c]));
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  if (!t.note.empty()) out += fmt::format("<p class=\"note\">{}</p>\n", html_escape(t.note));
  return out;
}

std::string anchor(std::size_t i) { return fmt::format("s{}", i + 1); }

}  // namespace

std::string render_markdown(const ReportDocument& doc, const fs::path& md_dir) {
  std::string out = fmt::format("# {}\n\n", markdown_escape(doc.title));
  for (const auto& p : doc.intro) out += markdown_escape(p) + "\n\n";
  for (const auto& s : doc.sections) out += fmt::format("- {}\n", markdown_escape(s.title));
  out += "\n";
  for (const auto& s : doc.sections) {
    out += fmt::format("## {}\n\n", markdown_escape(s.title));
    for (const auto& p : s.paragraphs) out += markdown_escape(p) + "\n\n";
    if (!s.recommendations.empty()) {
      out += "**Findings and recommendations**\n\n";
      for (const auto& r : s.recommendations) out += fmt::format("- {}\n", markdown_escape(r));
      out += "\n";
    }
    for (const auto& f : s.figures) {
      std::error_code ec;
      fs::path rel = fs::relative(f.svg, md_dir, ec);
      if (ec || rel.empty()) rel = f.svg;
      // The link target goes inside <...>: spaces and parentheses in paths stay one link.
      std::string target = rel.generic_string();
      std::string safe;
      for (char c : target) {
        if (c == '<' || c == '>' || static_cast<unsigned char>(c) < 0x20) {
          safe += fmt::format("%{:02X}", static_cast<unsigned char>(c));
        } else {
          safe += c;
        }
      }
      out += fmt::format("![{}](<{}>)\n\n*{}*\n\n", markdown_escape(f.caption), safe,
                         markdown_escape(f.caption));
    }
    for (const auto& t : s.tables) out += md_table(t);
  }
  return out;
}

std::string render_html(const ReportDocument& doc) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  out +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n";
  out += fmt::format("<title>{}</title>\n<style>{}</style></head>\n<body>\n",
                     html_escape(doc.title), kStyle);
  out += fmt::format("<h1>{}</h1>\n", html_escape(doc.title));
  for (const auto& p : doc.intro) out += fmt::format("<p>{}</p>\n", html_escape(p));
  out += "<nav><ul>\n";
  for (std::size_t i = 0; i < doc.sections.size(); ++i) {
    out += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", anchor(i),
                       html_escape(doc.sections[i].title));
  }
  out += "</ul></nav>\n";
  for (std::size_t i = 0; i < doc.sections.size(); ++i) {
    const ReportSection& s = doc.sections[i];
    out += fmt::format("<section id=\"{}\"><h2>{}</h2>\n", anchor(i), html_escape(s.title));
    for (const auto& p : s.paragraphs) out += fmt::format("<p>{}</p>\n", html_escape(p));
    if (!s.recommendations.empty()) {
      out += "<h3>Findings and recommendations</h3><ul class=\"recs\">\n";
      for (const auto& r : s.recommendations) out += fmt::format("<li>{}</li>\n", html_escape(r));
      out += "</ul>\n";
    }
    for (const auto& f : s.figures) {
      std::string svg;
      try {
        svg = read_file(f.svg);
      } catch (const std::exception& e) {
        out += fmt::format("<p class=\"missing\">figure {} could not be read: {}</p>\n",
                           html_escape(f.svg.string()), html_escape(e.what()));
        continue;
      }
      out += fmt::format(
          "<figure><img alt=\"{0}\" "
          "src=\"data:image/svg+xml;base64,{1}\"><figcaption>{0}</figcaption></figure>\n",
          html_escape(f.caption), base64(svg));
    }
    for (const auto& t : s.tables) out += html_table(t);
    out += "</section>\n";
  }
  out += fmt::format("<script>{}</script>\n</body></html>\n", kScript);
  return out;
}

}  // namespace nnperf
