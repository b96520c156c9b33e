// Everything of circuits/: encrypted integer arrays, the netlist and its scheduler, and the
// operations.
#pragma once

#include "torusgate/circuits/arithmetic.hpp"
#include "torusgate/circuits/bits.hpp"
#include "torusgate/circuits/cannon.hpp"
#include "torusgate/circuits/divide.hpp"
#include "torusgate/circuits/int_codec.hpp"
#include "torusgate/circuits/linalg.hpp"
#include "torusgate/circuits/lookup.hpp"
#include "torusgate/circuits/multiply.hpp"
#include "torusgate/circuits/netlist.hpp"
#include "torusgate/circuits/program.hpp"
#include "torusgate/circuits/regression.hpp"
#include "torusgate/circuits/schedule.hpp"
#include "torusgate/circuits/sort.hpp"
#include "torusgate/circuits/catalog.hpp"
