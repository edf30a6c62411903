// Which layers of a run's model attend over a sliding window ("local", as
// Gemma 3's five of every six) and which attend the whole context ("global"),
// for the needle-survival figure. Cells do not record it; the model file does
// (LlamaConfig::local, read from its GGUF header by read_llama_config), so the
// report reads the header of the file config.json names for the model (the
// path as the run was given it, relative to the directory kvbench runs in).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvbench {

// [layer] true for a local layer of the model labelled `model_label` in the
// run's config (its "models" entry with that label, else its "model").
// Empty when every layer is global, or when the file cannot be read (moved,
// another machine, not a model kvbench runs): the figure then marks nothing.
std::vector<bool> local_layers_of(const nlohmann::json& config, const std::string& model_label);

}  // namespace kvbench
