// noise_study's gate kinds and parameter sets, and their options (study_gates.hpp).
#include "study_gates.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <system_error>

#include "printable.hpp"
#include "text_support.hpp"
#include "torusgate/core/error.hpp"
#include "torusgate/core/params.hpp"

namespace torusgate::apps {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<StudyGate> default_study_gates() {
  std::vector<StudyGate> gates;
  for (GateKind k : {GateKind::And, GateKind::Nand, GateKind::Or, GateKind::Nor, GateKind::Xor,
                     GateKind::Xnor, GateKind::AndNY, GateKind::AndYN, GateKind::OrNY,
                     GateKind::OrYN, GateKind::Mux, GateKind::Majority, GateKind::Xor3,
                     GateKind::PrefixGenerate}) {
    gates.push_back({gate_label(GateSpec::of(k)), GateSpec::of(k), false});
  }
  for (const GateSpec& t : {GateSpec::threshold(0, {1}), GateSpec::threshold(0, {1, 1, -1}),
                            GateSpec::threshold(0, {1, -2}), GateSpec::threshold(0, {2, 2, 1}),
                            GateSpec::threshold(-1, {2, 2, 2})}) {
    gates.push_back({gate_label(t), t, false});
  }
  for (const GateSpec& t : {GateSpec::threshold(0, {5, 3, 1}), GateSpec::threshold(0, {8, 8, 7})}) {
    gates.push_back({gate_label(t), t, true});
  }
  return gates;
}

StudyGate parse_threshold_gate(const std::string& text) {
  std::vector<int> v;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = text.find(':', start);
    const std::string item = text.substr(start, colon == std::string::npos ? std::string::npos
                                                                           : colon - start);
    int value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec == std::errc::invalid_argument || end != item.data() + item.size()) {
      throw InvalidArgument("--threshold: '" + text + "' is not OFFSET:W1[:W2[:W3]] (integers, "
                            "in eighths); '" + item + "' is not an integer");
    }
    if (ec == std::errc::result_out_of_range) {
      // GateSpec::threshold's range; a value outside int never reaches it.
      throw InvalidArgument("--threshold: '" + text + "': " + item +
                            " is out of range; expected an integer in -8..8 (eighths)");
    }
    v.push_back(value);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (v.size() < 2 || v.size() > 4) {
    throw InvalidArgument("--threshold: '" + text + "' has " + std::to_string(v.size() - 1) +
                          " weights; expected OFFSET and 1 to 3 weights");
  }
  try {
    GateSpec spec = v.size() == 2   ? GateSpec::threshold(v[0], {v[1]})
                    : v.size() == 3 ? GateSpec::threshold(v[0], {v[1], v[2]})
                                    : GateSpec::threshold(v[0], {v[1], v[2], v[3]});
    return StudyGate{gate_label(spec), spec, false};
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("--threshold " + text + ": " + e.what());
  }
}

std::vector<StudyGate> select_study_gates(const std::string& list) {
  const std::vector<StudyGate> all = default_study_gates();
  std::vector<StudyGate> chosen;
  std::set<std::string> seen;
  auto take = [&](const StudyGate& g) {
    if (!seen.insert(g.label).second)
      throw InvalidArgument("--kinds: gate " + g.label + " is listed twice");
    chosen.push_back(g);
  };
  for (const std::string& raw : split_list(list)) {
    const std::string name = lower(raw);
    if (name == "all") {
      for (const auto& g : all) take(g);
    } else if (name == "fixed") {
      for (const auto& g : all) if (g.spec.kind != GateKind::Threshold) take(g);
    } else if (name == "threshold") {
      for (const auto& g : all) if (g.spec.kind == GateKind::Threshold && !g.stress) take(g);
    } else if (name == "stress") {
      for (const auto& g : all) if (g.stress) take(g);
    } else {
      const auto it = std::find_if(all.begin(), all.end(),
                                   [&](const StudyGate& g) { return lower(g.label) == name; });
      if (it == all.end()) {
        std::string known;
        for (const auto& g : all) known += (known.empty() ? "" : ", ") + g.label;
        throw InvalidArgument("--kinds: unknown gate kind '" + raw + "'; expected all, fixed, "
                              "threshold, stress or one of " + known);
      }
      take(*it);
    }
  }
  return chosen;
}

std::vector<std::string> select_parameter_sets(const std::string& list) {
  std::vector<std::string> chosen;
  auto take = [&](const std::string& name) {
    if (std::find(chosen.begin(), chosen.end(), name) != chosen.end())
      throw InvalidArgument("--params: parameter set " + name + " is listed twice");
    chosen.push_back(name);
  };
  for (const std::string& item : split_list(list)) {
    if (item == "real") {
      for (const char* n : {"tfhe_lib_128", "tfhe_lib_80", "default_128"}) take(n);
    } else if (item == "toy") {
      for (const char* n : {"toy_INSECURE", "toy_k2_INSECURE"}) take(n);
    } else if (item == "all") {
      for (const auto& p : all_parameter_sets()) take(p.name);
    } else {
      std::string name;
      try {
        name = parameters_by_name(item).name;
      } catch (const InvalidArgument&) {
        throw InvalidArgument("--params: unknown parameter set '" + printable(item) +
                              "'; expected real, toy, all or a name: " +
                              [] {
                                std::string k;
                                for (const auto& p : all_parameter_sets())
                                  k += (k.empty() ? "" : ", ") + p.name;
                                return k;
                              }());
      }
      take(name);
    }
  }
  return chosen;
}

}  // namespace torusgate::apps
