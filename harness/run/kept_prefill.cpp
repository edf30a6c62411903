#include "harness/run/kept_prefill.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "harness/run/plan.h"
#include "harness/run/run_folder.h"
#include "model/common/atomic_file.h"
#include "model/common/error.h"

namespace kvbench {

namespace fs = std::filesystem;

PrefillStore::PrefillStore(const std::string& run_dir, ModelIdentity model, std::string activations)
    : dir_(run_dir + "/prefills") {
  expect_.model = std::move(model);
  expect_.activations = std::move(activations);
}

std::string PrefillStore::base(const std::string& instance_id) const {
  return dir_ + "/" + file_name_safe(instance_id);
}

std::optional<KeptPrefill> PrefillStore::load(const std::string& instance_id,
                                              const std::vector<int32_t>& tokens, int32_t chunk,
                                              const std::vector<Span>& chunks,
                                              const CacheContext& needs,
                                              const std::vector<size_t>& chunks_needed) const {
  const std::string b = base(instance_id);
  if (!fs::exists(b + ".json")) return std::nullopt;
  std::string why;
  try {
    const nlohmann::json marker = read_json_file(b + ".json");
    KeptPrefill kept;
    kept.seconds = marker.at("seconds").get<double>();
    SnapshotDocument doc = load_cache_snapshot(b + ".kvc", expect_, kept.full);
    if (doc.tokens != tokens || doc.chunk != chunk)
      why = "it holds another prompt";
    else if (doc.logits.empty())
      why = "it has no next-token logits";
    // What a cache must be to stand in for the full cache here: collected
    // for these policies, holding exactly the first `end` prompt tokens.
    const auto unfit = [&](const PolicyCache& cache, int64_t end) -> std::string {
      const CacheContext& have = cache.context();
      // A kept cache never holds query statistics (not saved; see save()).
      if (needs.query_stats_skip >= 0) return "the policies need query statistics";
      if (have.context_tokens != needs.context_tokens || have.seed != needs.seed ||
          (needs.collect_attention && !have.collect_attention) ||
          have.keep_queries < needs.keep_queries)
        return "it was collected for other policies";
      if (static_cast<int64_t>(cache.pos_max(0)) + 1 != end)
        return "it holds " + std::to_string(static_cast<int64_t>(cache.pos_max(0)) + 1) +
               " prompt tokens, not " + std::to_string(end);
      return "";
    };
    if (why.empty()) why = unfit(*kept.full, static_cast<int64_t>(tokens.size()));
    for (size_t i : chunks_needed) {
      if (!why.empty()) break;
      std::unique_ptr<PolicyCache> c;
      const std::string file = b + ".after" + std::to_string(i) + ".kvc";
      const SnapshotDocument after = load_cache_snapshot(file, expect_, c);
      // A snapshot of another chunk, prompt or chunk size is never used in
      // this one's place (a swapped file would change results silently).
      if (i >= chunks.size())
        why = file + " is for a chunk this prompt does not have";
      else if (after.tokens != tokens || after.chunk != chunk)
        why = file + " holds another prompt";
      else if (const std::string w = unfit(*c, chunks[i].end); !w.empty())
        why = file + ": " + w + " (chunk " + std::to_string(i) + ")";
      kept.after_chunk[i] = std::move(c);
    }
    kept.logits = std::move(doc.logits);
    if (why.empty()) return kept;
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::cerr << "note: not using the kept prefill " << b << ".kvc (" << why
            << "); computing it again\n";
  remove(instance_id);
  return std::nullopt;
}

void PrefillStore::save(const std::string& instance_id, const std::vector<int32_t>& tokens,
                        int32_t chunk, const KeptPrefill& prefill) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw InputError(dir_ + ": cannot create (" + ec.message() + ")");
  // Query statistics (a full cache's for expected attention to import) are
  // not part of a cache's saved state: such a prefill could not be used.
  if (prefill.full->context().query_stats_skip >= 0) return;
  const std::string b = base(instance_id);
  SnapshotDocument doc;
  doc.tokens = tokens;
  doc.chunk = chunk;
  doc.activations = expect_.activations;
  // Fastest zstd level: these files live minutes and are read once at most.
  const SnapshotOptions fast{SnapshotCompression::Zstd, 1};
  for (const auto& [i, cache] : prefill.after_chunk)
    save_cache_snapshot(b + ".after" + std::to_string(i) + ".kvc", *cache, doc, expect_.model,
                        fast);
  doc.logits = prefill.logits;
  save_cache_snapshot(b + ".kvc", *prefill.full, doc, expect_.model, fast);
  nlohmann::json chunks = nlohmann::json::array();
  for (const auto& [i, cache] : prefill.after_chunk) chunks.push_back(i);
  write_file_atomic(
      b + ".json",
      nlohmann::json{{"seconds", prefill.seconds}, {"after_chunks", chunks}}.dump() + "\n");
}

void PrefillStore::remove(const std::string& instance_id) const {
  const std::string b = base(instance_id);
  const std::string name = fs::path(b).filename().string();
  std::error_code ec;
  fs::remove(b + ".json", ec);  // the marker first: a half-removed set is never taken as complete
  if (!fs::exists(dir_)) return;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().filename().string().rfind(name + ".", 0) == 0) fs::remove(e.path(), ec);
  if (fs::is_empty(dir_, ec)) fs::remove(dir_, ec);
}

}  // namespace kvbench
