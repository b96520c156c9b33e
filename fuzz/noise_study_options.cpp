// Fuzz harness: the parsers of noise_study's options that name gates and parameter sets
// (apps/study_gates.hpp): parse_threshold_gate (--threshold O:W1[:W2[:W3]]),
// select_study_gates (--kinds) and select_parameter_sets (--params), on arbitrary text. Each
// throws InvalidArgument only. A --threshold gate is a threshold gate of 1 to 3 weights whose
// label is its own and reads back, written as O:W1:..., the same gate; --kinds gives gates of
// the study's list, each once; --params gives known sets, each once.
//
// Input: the text.
#include <algorithm>
#include <set>

#include "fuzz_support.hpp"
#include "study_gates.hpp"
#include "text_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace torusgate;
  const std::string text = fuzz::as_string(data, size);
  fuzz::expect_only<InvalidArgument>("noise_study_options: parse_threshold_gate", [&] {
    const apps::StudyGate g = apps::parse_threshold_gate(text);
    fuzz::require(g.spec.kind == GateKind::Threshold && g.spec.arity >= 1 &&
                      g.spec.arity <= 3 && !g.stress && g.label == apps::gate_label(g.spec),
                  "noise_study_options: --threshold '" + text + "' gave the gate " + g.label);
    std::string again = std::to_string(g.spec.offset_eighths);
    for (int i = 0; i < g.spec.arity; ++i) again += ":" + std::to_string(g.spec.weights[i]);
    const apps::StudyGate back = apps::parse_threshold_gate(again);
    fuzz::require(back.label == g.label,
                  "noise_study_options: --threshold " + again + " does not read back " + g.label);
  });
  fuzz::expect_only<InvalidArgument>("noise_study_options: select_study_gates", [&] {
    const std::vector<apps::StudyGate> chosen = apps::select_study_gates(text);
    const std::vector<apps::StudyGate> all = apps::default_study_gates();
    std::set<std::string> labels;
    for (const apps::StudyGate& g : chosen) {
      const bool known = std::any_of(all.begin(), all.end(), [&](const apps::StudyGate& a) {
        return a.label == g.label && a.stress == g.stress && a.spec.kind == g.spec.kind;
      });
      fuzz::require(known && labels.insert(g.label).second,
                    "noise_study_options: --kinds gave the gate " + g.label +
                        " twice or one not in the study's list");
    }
    fuzz::require(!chosen.empty(), "noise_study_options: --kinds gave no gate");
  });
  fuzz::expect_only<InvalidArgument>("noise_study_options: select_parameter_sets", [&] {
    const std::vector<std::string> chosen = apps::select_parameter_sets(text);
    std::set<std::string> names;
    for (const std::string& name : chosen) {
      fuzz::require(parameters_by_name(name).name == name && names.insert(name).second,
                    "noise_study_options: --params gave the set " + name +
                        " twice or one it does not know");
    }
    fuzz::require(!chosen.empty(), "noise_study_options: --params gave no set");
  });
  return 0;
}
