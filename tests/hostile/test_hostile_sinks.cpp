// Hostile input, round three (issue 35), class 12: one encoder per sink,
// each fed every hostile class (line breaks, C0 and C1 controls, bidi
// overrides, '|', tags, formulas, quotes, a NUL, invalid UTF-8, markup), and
// checked where it can be against the sink itself: Markdown rendered by
// md4c with raw HTML allowed, sh, gnuplot, a CSV reader. Then the same text
// through the commands that write those sinks: report.md, report.html, the
// terminal, table.csv.
#include <gtest/gtest.h>

#include <md4c-html.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/encode/csv.h"
#include "harness/encode/gnuplot.h"
#include "harness/encode/html.h"
#include "harness/encode/markdown.h"
#include "harness/encode/shell.h"
#include "harness/subprocess.h"
#include "model/common/error.h"
#include "model/common/printable.h"
#include "tests/hostile/hostile_support.h"
#include "tests/support/cli_run.h"

namespace kvbench::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Every hostile class, one string each (and a few together).
const std::vector<std::string>& hostile() {
  static const std::vector<std::string> k = {
      "line\nbreak",
      "carriage\rreturn\ttab",
      "\x01\x1b[31mred\x7f",
      "C1 CSI \xc2\x9b"
      "31m",
      "bidi \xe2\x80\xae"
      "gnp.exe and isolate \xe2\x81\xa6x\xe2\x81\xa9 and LRM \xe2\x80\x8e",
      "line separator \xe2\x80\xa8 here",
      "a|b || c",
      "<script>alert(1)</script>",
      "<img src=x onerror=alert(1)>",
      "=HYPERLINK(\"http://evil.example\",\"click\")",
      "+1+2",
      "-2-3",
      "@SUM(A1:A2)",
      "it's \"quoted\" `back`",
      std::string("nul\0byte", 8),
      "bad \xff utf8 \xc0\xaf overlong \xed\xa0\x80 surrogate",
      "*em* _em_ [link](http://evil.example) ![img](x.png) ~~del~~ $x^2$ [[wiki]] &amp; &lt;",
      "# heading",
      "- list item",
      "1. ordered",
      "www.evil.example and mail@evil.example and https://evil.example",
      "\\",
      "back\\slash \\n literal",
      "'; system('touch /tmp/kvbench-sinks-PWNED'); print '",
      "",
  };
  return k;
}

// What a terminal may receive: valid UTF-8 without C0/C1 controls, DEL, or
// the invisible characters that reorder or break a line.
::testing::AssertionResult terminal_safe(const std::string& s, bool line_breaks = false) {
  for (size_t i = 0, n = 0; i < s.size(); i += n) {
    const auto c = static_cast<unsigned char>(s[i]);
    n = utf8_sequence(s, i);
    if (n == 0) return ::testing::AssertionFailure() << "invalid UTF-8 at " << i << " in " << s;
    if ((c < 0x20 && !(line_breaks && c == '\n')) || c == 0x7f)
      return ::testing::AssertionFailure() << "control " << int(c) << " at " << i;
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)
      return ::testing::AssertionFailure() << "C1 control at " << i;
    if (n == 3) {
      const uint32_t cp = ((c & 0x0F) << 12) |
                          ((static_cast<unsigned char>(s[i + 1]) & 0x3F) << 6) |
                          (static_cast<unsigned char>(s[i + 2]) & 0x3F);
      if (invisible_control(cp)) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "U+%04X", cp);
        return ::testing::AssertionFailure() << "invisible control " << hex;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Markdown rendered as a viewer does, raw HTML allowed, every extension on.
std::string render_markdown(const std::string& md) {
  std::string html;
  const auto sink = [](const MD_CHAR* text, MD_SIZE size, void* out) {
    static_cast<std::string*>(out)->append(text, size);
  };
  const unsigned flags = MD_DIALECT_GITHUB | MD_FLAG_LATEXMATHSPANS | MD_FLAG_WIKILINKS |
                         MD_FLAG_UNDERLINE | MD_FLAG_PERMISSIVEAUTOLINKS;
  EXPECT_EQ(md_html(md.data(), static_cast<MD_SIZE>(md.size()), sink, &html, flags, 0), 0);
  return html;
}

// The elements a label may never become in rendered Markdown.
::testing::AssertionResult no_markup_elements(const std::string& html) {
  for (const char* tag : {"<script", "<img", "<a ", "<a>", "<code", "<em", "<strong", "<del", "<u>",
                          "<x-equation", "<x-wikilink", "<h1", "<ul", "<ol", "<input"})
    if (html.find(tag) != std::string::npos)
      return ::testing::AssertionFailure() << tag << " in " << html;
  return ::testing::AssertionSuccess();
}

TEST(HostileSinks, Terminal) {
  for (const auto& s : hostile()) {
    SCOPED_TRACE(s);
    EXPECT_TRUE(terminal_safe(escaped_text(s, 4096)));
    EXPECT_TRUE(terminal_safe(escaped_text(s, 4096, false)));
  }
  EXPECT_EQ(escaped_text("a\xe2\x80\xae"
                         "b",
                         100),
            "a\\u202eb");
  EXPECT_EQ(escaped_text("\xc2\x9b", 100), "\\xc2\\x9b");
  EXPECT_EQ(escaped_text(std::string("a\0b", 3), 100), "a\\x00b");
}

TEST(HostileSinks, Markdown) {
  for (const auto& s : hostile()) {
    SCOPED_TRACE(s);
    const std::string md = markdown_text(s);
    EXPECT_TRUE(terminal_safe(md));
    // Inline: in a paragraph and in a table cell, shown as its characters.
    EXPECT_TRUE(no_markup_elements(render_markdown("x " + md + "\n")));
    const std::string table =
        render_markdown("| a | b |\n|---|---|\n| " + markdown_cell(s) + " | end |\n");
    EXPECT_TRUE(no_markup_elements(table));
    EXPECT_NE(table.find("<td>end</td>"), std::string::npos) << table;  // still two cells
    // At a line's start: no block either (a heading, a list).
    EXPECT_TRUE(no_markup_elements(render_markdown(markdown_text(s, 4096, true) + "\n")));
    // What a viewer shows is the terminal's text.
    EXPECT_EQ(markdown_unescape(md), escaped_text(s, 4096, false));
  }
  EXPECT_EQ(markdown_text("<b>"), "\\<b\\>");
  EXPECT_EQ(markdown_text("a\\b"), "a\\\\b");
  EXPECT_EQ(markdown_text("snapkv:budget=256"), "snapkv:budget=256");  // specs stay readable
}

TEST(HostileSinks, Html) {
  for (const auto& s : hostile()) {
    SCOPED_TRACE(s);
    const std::string h = html_escape(s);
    EXPECT_TRUE(terminal_safe(h, true));
    for (const char c : {'<', '>', '"', '\''}) EXPECT_EQ(h.find(c), std::string::npos) << c;
    for (size_t at = h.find('&'); at != std::string::npos; at = h.find('&', at + 1))
      EXPECT_TRUE(h.compare(at, 4, "&lt;") == 0 || h.compare(at, 4, "&gt;") == 0 ||
                  h.compare(at, 5, "&amp;") == 0 || h.compare(at, 6, "&quot;") == 0 ||
                  h.compare(at, 5, "&#39;") == 0)
          << h.substr(at, 8);
  }
  EXPECT_EQ(html_escape("a\nb"), "a\nb");  // model output keeps its lines
}

TEST(HostileSinks, Csv) {
  for (const auto& s : hostile()) {
    SCOPED_TRACE(s);
    const std::string f = csv_field(s);
    EXPECT_TRUE(terminal_safe(f));
    const auto records = parse_csv(f + "," + csv_field("next") + "\n", "test");
    ASSERT_EQ(records.size(), 1u);
    ASSERT_EQ(records[0].size(), 2u);
    EXPECT_EQ(records[0][1], "next");
    const std::string& v = records[0][0];
    EXPECT_TRUE(v.empty() || std::string("=+-@\t\r").find(v[0]) == std::string::npos) << v;
  }
  EXPECT_EQ(csv_field("=1+1"), "\"'=1+1\"");
  EXPECT_EQ(csv_field("snapkv \"256\""), "\"snapkv \"\"256\"\"\"");
}

TEST(HostileSinks, Shell) {
  for (const auto& s : hostile()) {
    SCOPED_TRACE(s);
    if (s.find('\0') != std::string::npos) {
      EXPECT_THROW(shell_quote(s), InputError);
      continue;
    }
    // sh reads the quoted word back as exactly the text.
    const Captured r = run_capture({"sh", "-c", "printf %s " + shell_quote(s)});
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(r.out, s);
  }
}

TEST(HostileSinks, Gnuplot) {
  const std::string dir = scratch("gnuplot-sink");
  for (const auto& s : hostile()) {
    SCOPED_TRACE(s);
    // gnuplot prints the literal as one line of text: the string ended no
    // command and ran none.
    const std::string script = dir + "/print.gp";
    std::ofstream(script) << "print " << gnuplot_string(s) << "\nprint 'END'\n";
    const Captured r = run_capture({"gnuplot", script});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err.substr(r.err.size() - 4), "END\n") << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << r.err;
    // As an output path: absolute, or refused.
    try {
      EXPECT_EQ(gnuplot_output(dir + "/" + s).substr(0, 2), "'/");
    } catch (const InputError&) {
      EXPECT_FALSE(terminal_safe(s));
    }
  }
  EXPECT_FALSE(fs::exists("/tmp/kvbench-sinks-PWNED"));
  // gnuplot 5.4 misreads a literal that begins with a doubled quote.
  EXPECT_EQ(gnuplot_string("'a"), "\"'\" . 'a'");
  EXPECT_EQ(gnuplot_string("''"), "\"''\"");
  EXPECT_EQ(gnuplot_string("it's"), "'it''s'");
}

// Rendered Markdown of a report: kvbench's own images (plots/) only, and no
// script, handler or javascript: link from the text it quotes.
::testing::AssertionResult only_own_markup(const std::string& html) {
  const std::string own = "<img src=\"plots/";
  for (size_t at = html.find("<img"); at != std::string::npos; at = html.find("<img", at + 1))
    if (html.compare(at, own.size(), own) != 0)
      return ::testing::AssertionFailure() << html.substr(at, 60);
  for (const char* bad : {"<script", "<img src=x", "href=\"javascript", "<b>"})
    if (html.find(bad) != std::string::npos)
      return ::testing::AssertionFailure() << bad << " in " << html;
  return ::testing::AssertionSuccess();
}

// SQL: bound parameters only. A label made of SQL, quotes and controls goes
// into the history and comes back byte for byte; the tables are intact;
// history show prints it through the Markdown encoder.
TEST(HostileSinks, SqlStoresLabelsByteForByte) {
  const std::string dir = scratch("sql-sink");
  const std::string label =
      "x'); DROP TABLE cells; --\" `$(id)` \xc2\x9b"
      "31m \xe2\x80\xae"
      "gnp <script>";
  // (The config as a file: the label's quotes would end a shell word.)
  json config = json::parse(slurp(test::tiny_experiment(dir)));
  config["policies"] = json::array({"full", {{"spec", "window:budget=64"}, {"label", label}}});
  std::ofstream(dir + "/sql.json") << config.dump();
  const auto r = run_kvbench("run " + dir + "/sql.json -q --out " + dir + "/out");
  ASSERT_EQ(r.code, 0) << r.err;
  std::string run;
  for (const auto& e : fs::directory_iterator(dir + "/out")) run = e.path().string();
  const std::string db = dir + "/h.sqlite";
  ASSERT_EQ(run_kvbench("history add " + run + " --db " + db).code, 0);
  sqlite3* conn = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(conn, "SELECT configuration, count(*) FROM cells GROUP BY 1 ORDER BY 1",
                         -1, &st, nullptr),
      SQLITE_OK);
  std::vector<std::pair<std::string, int>> rows;
  while (sqlite3_step(st) == SQLITE_ROW)
    rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                      sqlite3_column_int(st, 1));
  sqlite3_finalize(st);
  sqlite3_close(conn);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], std::make_pair(std::string("full"), 1));
  EXPECT_EQ(rows[1], std::make_pair(label, 1));
  const auto show = run_kvbench("history show --db " + db);
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_TRUE(terminal_safe(show.out, true));
  EXPECT_NE(show.out.find(markdown_cell(label)), std::string::npos) << show.out;
}

// The commands: a shared run folder whose labels, task, description and
// meta text hold the hostile classes.
TEST(HostileSinks, ReportTerminalAndTableCarryNoMarkupControlsOrFormulas) {
  const std::string dir = scratch("sink-commands");
  // Labels a config may hold (no C0 controls): C1, bidi, tags, a formula.
  const std::string label =
      "=HYPERLINK(\"http://evil.example\") <script>alert(1)</script> \xc2\x9b"
      "31m "
      "\xe2\x80\xae"
      "gnp.exe";
  test::tiny_experiment(dir);
  const auto r =
      run_kvbench("run " + dir + "/tiny.json --out " + dir +
                  "/out --set 'policies=[\"full\", {\"spec\": \"window:budget=64\", \"label\": " +
                  json(label).dump() + "}]'");
  ASSERT_EQ(r.code, 0) << r.err;
  // The terminal (the table printed, progress): no C1, no bidi override.
  for (const std::string& text : {r.out, r.err}) EXPECT_TRUE(terminal_safe(text, true)) << text;
  std::string run;
  for (const auto& e : fs::directory_iterator(dir + "/out")) run = e.path().string();
  // table.csv and cells.csv: the label is text, not a formula.
  const auto csv = parse_csv(slurp(run + "/table.csv"), "table.csv");
  ASSERT_EQ(csv.size(), 3u);
  ASSERT_EQ(csv[0][1], "configuration");
  EXPECT_EQ(csv[2][1].substr(0, 2), "'=");
  const auto cells = parse_csv(slurp(run + "/cells.csv"), "cells.csv");
  ASSERT_GE(cells.size(), 2u);
  ASSERT_EQ(cells[0][1], "configuration");
  size_t formulas = 0;
  for (const auto& record : cells)
    if (record.size() > 1 && record[1].rfind("'=", 0) == 0) ++formulas;
  EXPECT_EQ(formulas, test::cell_files(run).size() / 2) << slurp(run + "/cells.csv");
  // Now as a colleague shares it: hostile task, description, meta text.
  for (const auto& f : test::cell_files(run)) {
    json c = json::parse(slurp(f));
    c["instance"]["task"] = "<img src=x onerror=alert(1)> | task";
    std::ofstream(f) << c.dump();
  }
  json config = json::parse(slurp(run + "/config.json"));
  config["description"] = "<script>alert(2)</script>\n# injected\n[x](javascript:alert(3))";
  config["name"] = "<b>name</b>";
  std::ofstream(run + "/config.json") << config.dump();
  json meta = json::parse(slurp(run + "/meta.json"));
  meta["cpu"] = "<img src=x onerror=alert(4)>";
  meta["git_commit"] = "<script>alert(5)</script>";
  std::ofstream(run + "/meta.json") << meta.dump();
  const auto rep = run_kvbench("report " + run);
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_TRUE(terminal_safe(rep.out, true));
  const std::string md = slurp(run + "/report.md");
  EXPECT_TRUE(only_own_markup(render_markdown(md)));
  EXPECT_TRUE(no_markup_elements(render_markdown(slurp(run + "/table.md"))));
  const std::string html = slurp(run + "/report.html");
  for (const char* bad : {"<script", "<img src=x", "<b>name", "\xe2\x80\xae", "\xc2\x9b"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
}

}  // namespace
}  // namespace kvbench::test
