#include "datasets/text_source.h"

#include <fstream>

#include <boost/iostreams/filter/gzip.hpp>
#include <boost/iostreams/filtering_stream.hpp>

#include "model/error.h"

namespace kvbench {

std::string read_text_lines(const std::string& path, int64_t first, int64_t last) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError(path + ": cannot open file (is its Debian package installed? run scripts/setup.sh)");
  boost::iostreams::filtering_istream in;
  if (path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)
    in.push(boost::iostreams::gzip_decompressor());
  in.push(file);
  std::string out, line;
  int64_t n = 0;
  try {
    while (std::getline(in, line)) {
      ++n;
      if (n < first) continue;
      if (last > 0 && n > last) break;
      out += line;
      out += '\n';
    }
  } catch (const boost::iostreams::gzip_error& e) {
    throw InputError(path + ": corrupt gzip data (" + e.what() + ")");
  }
  if (n < first) throw InputError(path + ": has " + std::to_string(n) + " lines, fewer than " + std::to_string(first));
  return out;
}

}  // namespace kvbench
