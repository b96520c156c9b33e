// The gate kinds and parameter sets noise_study measures, and the parsers of its options that
// name them (--threshold, --kinds, --params). They need no backend: noise_measure.hpp and
// noise_report.hpp include this header, and the fuzz harness fuzz/noise_study_options.cpp
// links study_gates.cpp without the backends.
#pragma once

#include <string>
#include <vector>

#include "torusgate/core/gates.hpp"

namespace torusgate::apps {

// One gate kind of the study: a label for tables ("NAND", "T(0;1,1,-1)"), its spec, and
// whether it is a stress gate (weights far beyond what circuits use, chosen so that the
// model predicts failures a run can count).
struct StudyGate {
  std::string label;
  GateSpec spec;
  bool stress = false;
};

// Every bootstrapped kind of core/gates.hpp (the TFHE library gates, MUX, MAJORITY, XOR3,
// PREFIX_GENERATE), the weighted threshold gates T(0;1) (a bootstrapped copy), T(0;1,1,-1),
// T(0;1,-2), T(0;2,2,1), T(-1;2,2,2), and the stress gates T(0;5,3,1) and T(0;8,8,7).
std::vector<StudyGate> default_study_gates();

// "OFFSET:W1[:W2[:W3]]" (eighths) -> a threshold gate; throws InvalidArgument.
StudyGate parse_threshold_gate(const std::string& text);

// Gate labels (case-insensitive) and the groups all, fixed, threshold, stress, comma-separated;
// throws InvalidArgument for an unknown name, a duplicate or an empty list.
std::vector<StudyGate> select_study_gates(const std::string& list);

// Parameter set names and the groups real (tfhe_lib_128, tfhe_lib_80, default_128), toy and
// all; throws InvalidArgument for an unknown name, a duplicate or an empty list.
std::vector<std::string> select_parameter_sets(const std::string& list);

}  // namespace torusgate::apps
