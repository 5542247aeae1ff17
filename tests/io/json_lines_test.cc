// Tests for io/json_lines: a file begun atomically and appended a whole line at a time reads back
// value for value; a cut last line is left out and reported; a line that is not JSON is an Error
// naming the file and line; appending needs a file begun first.
#include "nnperf/io/json_lines.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "test_util.h"

namespace nnperf {
namespace {

TEST(JsonLines, BegunAtomicallyThenAppendedReadsBackInOrder) {
  test::TempDir dir;
  const auto path = dir / "r.jsonl";
  write_json_lines_atomic(path, {{{"context", {{"model", "m"}}}}});
  const nlohmann::json with_newline = {{"text", "a\nb"}, {"size", 32}};
  append_json_line(path, with_newline);
  append_json_line(path, {{"size", 40}, {"x", 1.5}});
  const std::string text = test::read_text(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;  // dump() escapes "\n"
  const JsonLines lines = read_json_lines(path);
  EXPECT_FALSE(lines.cut_last);
  ASSERT_EQ(lines.values.size(), 3u);
  EXPECT_EQ(lines.values[0]["context"]["model"], "m");
  EXPECT_EQ(lines.values[1], with_newline);
  EXPECT_EQ(lines.values[2]["x"], 1.5);
  // Begun again: the lines are replaced, not appended to.
  write_json_lines_atomic(path, {{{"size", 1}}});
  EXPECT_EQ(test::read_text(path), "{\"size\":1}\n");
}

TEST(JsonLines, CutLastLineIsLeftOutAndBadLinesNamed) {
  test::TempDir dir;
  const auto path = dir / "r.jsonl";
  write_file_atomic(path, "{\"a\":1}\n\n{\"b\":2}\n{\"c\":");
  JsonLines lines = read_json_lines(path);
  EXPECT_TRUE(lines.cut_last);
  ASSERT_EQ(lines.values.size(), 2u);  // the blank line skipped
  EXPECT_EQ(lines.values[1]["b"], 2);
  write_file_atomic(path, "{\"a\":1}\n{\"b\":\n{\"c\":3}\n");
  try {
    (void)read_json_lines(path);
    ADD_FAILURE() << "a broken line was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + ": line 2: not valid JSON"),
              std::string::npos)
        << e.what();
  }
  // Torn before a newline written later: the last line is not JSON, and counts as cut.
  write_file_atomic(path, std::string("{\"a\":1}\n{\"b\"") + std::string(3, '\0') + "\n\n");
  lines = read_json_lines(path);
  EXPECT_TRUE(lines.cut_last);
  ASSERT_EQ(lines.values.size(), 1u);
  write_file_atomic(path, "");
  lines = read_json_lines(path);
  EXPECT_TRUE(lines.values.empty());
  EXPECT_FALSE(lines.cut_last);
}

TEST(JsonLines, AppendingNeedsAFileBegunFirst) {
  test::TempDir dir;
  try {
    append_json_line(dir / "none.jsonl", {{"size", 1}});
    ADD_FAILURE() << "appended to a file that does not exist";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("none.jsonl: cannot open for appending"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "none.jsonl"));
}

}  // namespace
}  // namespace nnperf
