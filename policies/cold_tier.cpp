#include "policies/cold_tier.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <limits>

#include "model/common/error.h"

namespace kvbench {
namespace {

int64_t chunk_bytes_for(int64_t slot_bytes, int slots) {
  const int64_t page = std::max<long>(4096, sysconf(_SC_PAGESIZE));
  const int64_t raw = slot_bytes * slots;
  return (raw + page - 1) / page * page;
}

}  // namespace

// --- PageArena ---

PageArena::PageArena(int64_t slot_bytes, bool file, std::string dir)
    : slot_bytes_(slot_bytes), file_(file), dir_(std::move(dir)) {
  if (!file_) return;
  std::string path = dir_ + "/kvbench-cold-XXXXXX";
  fd_ = mkstemp(path.data());
  if (fd_ < 0)
    throw InputError("offload: cannot create the cold-tier file in '" + dir_ +
                     "': " + std::strerror(errno));
  unlink(path.c_str());  // the file lives as long as the descriptor
}

PageArena::~PageArena() {
  const int64_t cb = chunk_bytes_for(slot_bytes_, kChunkSlots);
  for (uint8_t* c : chunks_) {
    if (file_)
      munmap(c, cb);
    else
      delete[] c;
  }
  if (fd_ >= 0) close(fd_);
}

void PageArena::grow() {
  const int64_t cb = chunk_bytes_for(slot_bytes_, kChunkSlots);
  uint8_t* chunk = nullptr;
  if (file_) {
    const off_t offset = static_cast<off_t>(chunks_.size()) * cb;
    if (ftruncate(fd_, offset + cb) != 0)
      throw InputError("offload: cannot grow the cold-tier file in '" + dir_ +
                       "': " + std::strerror(errno));
    void* p = mmap(nullptr, cb, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, offset);
    if (p == MAP_FAILED)
      throw InputError("offload: cannot map the cold-tier file in '" + dir_ +
                       "': " + std::strerror(errno));
    chunk = static_cast<uint8_t*>(p);
  } else {
    chunk = new uint8_t[cb];
  }
  chunks_.push_back(chunk);
  const int32_t first = static_cast<int32_t>((chunks_.size() - 1) * kChunkSlots);
  live_.resize(live_.size() + kChunkSlots, 0);
  for (int i = kChunkSlots - 1; i >= 0; --i) free_.push_back(first + i);
}

int32_t PageArena::alloc() {
  if (free_.empty()) grow();
  const int32_t s = free_.back();
  free_.pop_back();
  live_[s] = 1;
  return s;
}

void PageArena::release(int32_t s) {
  assert(live_[s]);
  live_[s] = 0;
  free_.push_back(s);
}

std::unique_ptr<PageArena> PageArena::clone() const {
  auto out = std::make_unique<PageArena>(slot_bytes_, file_, dir_);
  for (size_t c = 0; c < chunks_.size(); ++c) out->grow();
  out->free_ = free_;
  out->live_ = live_;
  for (size_t s = 0; s < live_.size(); ++s)
    if (live_[s])
      std::memcpy(out->slot(static_cast<int32_t>(s)), slot(static_cast<int32_t>(s)), slot_bytes_);
  return out;
}

// --- ColdTier ---

int32_t ColdHead::entries() const {
  int32_t n = 0;
  for (const auto& p : pages) n += p.meta.size();
  return n;
}

ColdTier::ColdTier(const RowCodec& codec, int page, int n_heads, bool file, const std::string& dir,
                   int n_stats)
    : codec_(codec),
      page_(page),
      n_stats_(n_stats),
      heads_(n_heads),
      arena_(std::make_unique<PageArena>(2 * page * codec.row_bytes(), file, dir)) {}

std::unique_ptr<ColdTier> ColdTier::clone() const {
  return std::unique_ptr<ColdTier>(new ColdTier(*this));
}

const uint8_t* ColdTier::key_bytes(const ColdPage& p, int32_t i) const {
  return arena_->slot(p.slot) + i * codec_.row_bytes();
}
uint8_t* ColdTier::key_bytes(ColdPage& p, int32_t i) {
  return arena_->slot(p.slot) + i * codec_.row_bytes();
}
const uint8_t* ColdTier::value_bytes(const ColdPage& p, int32_t i) const {
  return arena_->slot(p.slot) + (page_ + i) * codec_.row_bytes();
}

void ColdTier::put(int h, const uint8_t* k, const uint8_t* v, int32_t pos, int32_t src,
                   uint64_t seqs, const float* stats) {
  auto& pages = heads_[h].pages;
  if (pages.empty() || pages.back().meta.size() >= page_) {
    ColdPage p;
    p.meta.index = index_;
    p.meta.n_stats = n_stats_;
    p.slot = arena_->alloc();
    p.kmin.assign(codec_.dim(), std::numeric_limits<float>::infinity());
    p.kmax.assign(codec_.dim(), -std::numeric_limits<float>::infinity());
    pages.push_back(std::move(p));
  }
  ColdPage& p = pages.back();
  const int32_t i = p.meta.size();
  const int64_t rb = codec_.row_bytes();
  std::memcpy(arena_->slot(p.slot) + i * rb, k, rb);
  std::memcpy(arena_->slot(p.slot) + (page_ + i) * rb, v, rb);
  p.meta.push(pos, src, seqs, stats);
  // Bounds from the key as attention will see it (decoded).
  static thread_local std::vector<float> key;
  key.resize(codec_.dim());
  codec_.decode(k, key.data());
  for (int c = 0; c < codec_.dim(); ++c) {
    p.kmin[c] = std::min(p.kmin[c], key[c]);
    p.kmax[c] = std::max(p.kmax[c], key[c]);
  }
}

void ColdTier::link_positions(PositionIndex* index) {
  index_ = index;
  for (auto& head : heads_)
    for (auto& p : head.pages) p.meta.index = index;
}

void ColdTier::recompute_bounds(ColdPage& p) const {
  static thread_local std::vector<float> key;
  key.resize(codec_.dim());
  std::fill(p.kmin.begin(), p.kmin.end(), std::numeric_limits<float>::infinity());
  std::fill(p.kmax.begin(), p.kmax.end(), -std::numeric_limits<float>::infinity());
  for (int32_t i = 0; i < p.meta.size(); ++i) {
    codec_.decode(key_bytes(p, i), key.data());
    for (int c = 0; c < codec_.dim(); ++c) {
      p.kmin[c] = std::min(p.kmin[c], key[c]);
      p.kmax[c] = std::max(p.kmax[c], key[c]);
    }
  }
}

void ColdTier::drop_oldest(int h, int64_t capacity) {
  auto& pages = heads_[h].pages;
  int64_t n = heads_[h].entries();
  size_t drop = 0;
  while (drop < pages.size() && n > capacity) n -= pages[drop++].meta.size();
  for (size_t i = 0; i < drop; ++i) {
    pages[i].meta.clear();  // out of the position index before the page goes
    arena_->release(pages[i].slot);
  }
  pages.erase(pages.begin(), pages.begin() + static_cast<std::ptrdiff_t>(drop));
}

void ColdTier::remove(int h, int32_t pi, const std::vector<char>& remove) {
  auto& pages = heads_[h].pages;
  ColdPage& p = pages[pi];
  const int64_t rb = codec_.row_bytes();
  uint8_t* base = arena_->slot(p.slot);
  for (int32_t i = p.meta.size() - 1; i >= 0; --i) {
    if (!remove[i]) continue;
    const int32_t last = p.meta.size() - 1;
    if (i != last) {
      std::memcpy(base + i * rb, base + last * rb, rb);
      std::memcpy(base + (page_ + i) * rb, base + (page_ + last) * rb, rb);
      p.meta.copy_entry(i, last);
    }
    p.meta.pop_back();
  }
  if (p.meta.size() == 0) {
    arena_->release(p.slot);
    pages.erase(pages.begin() + pi);
    return;
  }
  recompute_bounds(p);
}

float ColdTier::bound(const ColdPage& p, const float* q, int dim) {
  // Eight independent partial sums (the compiler keeps them in vector
  // registers; one running sum would force a serial chain), added in a fixed
  // order: the same bound on every machine.
  constexpr int kLanes = 8;
  float acc[kLanes] = {};
  const float* hi = p.kmax.data();
  const float* lo = p.kmin.data();
  int c = 0;
  for (; c + kLanes <= dim; c += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += std::max(q[c + j] * hi[c + j], q[c + j] * lo[c + j]);
  for (; c < dim; ++c) acc[c % kLanes] += std::max(q[c] * hi[c], q[c] * lo[c]);
  float b = 0.0f;
  for (int j = 0; j < kLanes; ++j) b += acc[j];
  return b;
}

void ColdTier::clear() {
  for (auto& h : heads_) {
    for (auto& p : h.pages) arena_->release(p.slot);
    h.pages.clear();
  }
}

uint64_t ColdTier::bound_bytes() const {
  uint64_t pages = 0;
  for (const auto& h : heads_) pages += h.pages.size();
  return pages * 2 * sizeof(float) * static_cast<uint64_t>(codec_.dim());
}

void ColdTier::tally(MemoryReport& r, int n_kv_heads) const {
  for (int h = 0; h < n_heads(); ++h) {
    MemoryTally t(r, h / n_kv_heads, /*cold=*/true);
    MemoryBytes b;
    for (const auto& p : heads_[h].pages) {
      const uint64_t n = static_cast<uint64_t>(p.meta.size());
      b.kv += 2 * n * codec_.data_bytes();
      b.scales += 2 * n * codec_.param_bytes();
      b.meta += p.meta.bytes() + 2 * sizeof(float) * static_cast<uint64_t>(codec_.dim());
      b.entries += n;
    }
    if (b.entries) t.add(std::string(codec_name(codec_.kind())), b);
  }
}

}  // namespace kvbench
