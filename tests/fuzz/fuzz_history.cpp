// libFuzzer target for the recall history's reader (history show and plot).
// The input is written to a scratch file and read as a history database the
// way the CLI reads one: the file checked (db_file.h), opened read-only and
// immutable, its schema compared with kvbench's own, every run and cell
// read into the trend (trend.h), then rendered as show's markdown, CSV and
// JSON and plot's gnuplot script. Any input must be refused with an InputError naming the
// file or be read whole; and the read must write nothing beside the file
// (no "-journal", no "-wal").
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "harness/history/plot.h"
#include "harness/history/schema.h"
#include "harness/history/show.h"
#include "harness/history/show_data.h"
#include "harness/history/trend.h"
#include "model/common/error.h"
#include "tests/fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvbench;
  static const std::string path = fuzz::scratch_path("fuzz_history", ".sqlite");
  fuzz::write_file(path, fuzz::input_text(data, size));
  try {
    const auto db = history::open_history_read(path);
    for (const std::string experiment : {"", "tiny"}) {
      const history::Trend t = history::load_trend(*db, 0.0, experiment);
      (void)history::show_markdown(t, path);
      (void)history::show_csv(t);
      (void)history::show_json(t, path);
      (void)history::plot_script(t, "trend.png");
    }
  } catch (const InputError& e) {
    fuzz::expect_names_file(e.what(), path);
  }
  // A read never writes: nothing may appear beside the file.
  for (const char* suffix : {"-journal", "-wal", "-shm"})
    if (::access((path + suffix).c_str(), F_OK) == 0) std::abort();
  return 0;
}
