// Verilog emission for the radix-2 streaming datapath: the unit chain of StreamingFft as
// modules (stride permutations as delay lines with per-phase multiplexers, stages with
// twiddle ROMs, complex multipliers and butterflies with the model's rounding and wrapping),
// the testbench, and the test-vector and output file formats.
#include "torusgate/fpga_fft/verilog.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <map>
#include <sstream>
#include <string_view>

#include "torusgate/core/error.hpp"

namespace torusgate::fpga_fft {
namespace {

std::string hex_word(const CWord& w, unsigned W) {
  const unsigned __int128 mask = W >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << W) - 1;
  const unsigned __int128 v = ((static_cast<unsigned __int128>(static_cast<std::uint64_t>(w.im)) & mask) << W) |
                              (static_cast<unsigned __int128>(static_cast<std::uint64_t>(w.re)) & mask);
  const unsigned digits = (2 * W + 3) / 4;
  std::string s(digits, '0');
  for (unsigned i = 0; i < digits; ++i) {
    s[digits - 1 - i] = "0123456789abcdef"[static_cast<unsigned>((v >> (4 * i)) & 15)];
  }
  return s;
}

// A signed Verilog literal of `bits` bits.
std::string literal(std::int64_t v, unsigned bits) {
  const std::uint64_t magnitude =
      v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  std::string s = v < 0 ? "-" : "";
  s += std::to_string(bits);
  s += "'sd";
  s += std::to_string(magnitude);
  return s;
}

unsigned log2u(std::size_t v) { return static_cast<unsigned>(std::countr_zero(v)); }

struct Context {
  std::string name;
  unsigned W = 0, T = 0, TF = 0, lanes = 0, bus = 0, per = 0, phase_bits = 0;
  bool nearest = true;
  std::string re(const std::string& bus_name, std::size_t lane) const {
    return bus_name + "[" + std::to_string(2 * lane * W) + " +: " + std::to_string(W) + "]";
  }
  std::string im(const std::string& bus_name, std::size_t lane) const {
    return bus_name + "[" + std::to_string((2 * lane + 1) * W) + " +: " + std::to_string(W) + "]";
  }
};

void emit_header(std::ostringstream& o, const Context& c, const std::string& name,
                 const std::string& comment) {
  o << "// " << comment << "\n"
    << "module " << name << " (\n"
    << "  input  wire clk,\n  input  wire rst,\n  input  wire iv,\n"
    << "  input  wire [" << c.bus - 1 << ":0] id,\n"
    << "  output wire ov,\n"
    << "  output wire [" << c.bus - 1 << ":0] od\n);\n";
}

void emit_phase_counter(std::ostringstream& o, const Context& c, const std::string& valid) {
  o << "  reg [" << c.phase_bits - 1 << ":0] phase;\n"
    << "  always @(posedge clk) begin\n"
    << "    if (rst) phase <= 0;\n"
    << "    else if (" << valid << ") phase <= (phase == " << c.per - 1 << ") ? "
    << c.phase_bits << "'d0 : phase + " << c.phase_bits << "'d1;\n"
    << "  end\n";
}

void emit_support(std::ostringstream& o, const Context& c) {
  o << "// Delay line of DEPTH registers (DEPTH = 0: a wire).\n"
    << "module " << c.name << "_delay #(parameter WIDTH = 1, parameter DEPTH = 0) (\n"
    << "  input  wire clk,\n  input  wire [WIDTH-1:0] d,\n  output wire [WIDTH-1:0] q\n);\n"
    << "  generate\n    if (DEPTH == 0) begin : through\n      assign q = d;\n"
    << "    end else begin : registers\n      reg [WIDTH-1:0] r [0:DEPTH-1];\n"
    << "      integer i;\n      always @(posedge clk) begin\n        r[0] <= d;\n"
    << "        for (i = 1; i < DEPTH; i = i + 1) r[i] <= r[i-1];\n      end\n"
    << "      assign q = r[DEPTH-1];\n    end\n  endgenerate\nendmodule\n\n"
    << "// Valid flags: DEPTH registers cleared by rst.\n"
    << "module " << c.name << "_valid #(parameter DEPTH = 0) (\n"
    << "  input  wire clk,\n  input  wire rst,\n  input  wire d,\n  output wire q\n);\n"
    << "  generate\n    if (DEPTH == 0) begin : through\n      assign q = d;\n"
    << "    end else begin : registers\n      reg [DEPTH-1:0] r;\n"
    << "      always @(posedge clk) r <= rst ? {DEPTH{1'b0}} : ((r << 1) | {{(DEPTH-1){1'b0}}, d});\n"
    << "      assign q = r[DEPTH-1];\n    end\n  endgenerate\nendmodule\n\n";
}

void emit_permutation(std::ostringstream& o, const Context& c, const std::string& name,
                      const StreamingUnit& unit) {
  const std::size_t w = c.lanes, per = c.per;
  const std::uint64_t delay = unit.latency;
  // Output lane l of output phase p reads input lane source % w from `age` cycles ago.
  std::uint64_t depth = 0;
  std::vector<std::vector<std::pair<std::uint64_t, std::size_t>>> pick(per);
  for (std::size_t p = 0; p < per; ++p) {
    for (std::size_t l = 0; l < w; ++l) {
      const std::size_t x = unit.source[p * w + l];
      const std::uint64_t age = p + delay - x / w;
      pick[p].push_back({age, x % w});
      depth = std::max(depth, age);
    }
  }
  emit_header(o, c, name, unit.description);
  o << "  " << c.name << "_valid #(.DEPTH(" << delay << ")) valid_line (.clk(clk), .rst(rst), "
    << ".d(iv), .q(ov));\n";
  emit_phase_counter(o, c, "ov");
  if (depth > 0) {
    o << "  reg [" << c.bus - 1 << ":0] hist [1:" << depth << "];\n  integer a;\n"
      << "  always @(posedge clk) begin\n    hist[1] <= id;\n"
      << "    for (a = 2; a <= " << depth << "; a = a + 1) hist[a] <= hist[a-1];\n  end\n";
  }
  o << "  reg [" << c.bus - 1 << ":0] out;\n  assign od = out;\n"
    << "  always @(*) begin\n    case (phase)\n";
  for (std::size_t p = 0; p < per; ++p) {
    o << "      " << c.phase_bits << "'d" << p << ": out = {";
    for (std::size_t l = w; l-- > 0;) {
      const auto [age, lane] = pick[p][l];
      const std::string src = age == 0 ? std::string("id") : "hist[" + std::to_string(age) + "]";
      o << src << "[" << 2 * lane * c.W << " +: " << 2 * c.W << "]" << (l > 0 ? ", " : "");
    }
    o << "};\n";
  }
  o << "      default: out = " << c.bus << "'d0;\n    endcase\n  end\nendmodule\n\n";
}

void emit_stage(std::ostringstream& o, const Context& c, const std::string& name,
                const StreamingUnit& unit, const StreamingFft& model) {
  const FixedFft& fft = model.transform();
  const StreamingConfig& sc = model.config();
  const bool forward = model.direction() == Direction::Forward;
  const std::size_t s = unit.stage, w = c.lanes, per = c.per, L = fft.block_length(s);
  const std::size_t half = L / 2, G = w / 2;
  const bool multiplies = fft.stage_has_multiplier(s);
  // Butterfly g takes lanes pair[g] (digit 0, digit 1), the same in every phase.
  std::vector<std::pair<std::size_t, std::size_t>> pair(G);
  std::vector<std::vector<std::int64_t>> angle(per, std::vector<std::int64_t>(G));
  for (std::size_t p = 0; p < per; ++p) {
    std::map<std::size_t, std::pair<std::size_t, std::size_t>> groups;  // b*L + j -> lanes
    for (std::size_t l = 0; l < w; ++l) {
      const std::size_t i = model.stage_position(s, p * w + l);
      auto& g = groups[(i / L) * L + i % half];
      ((i / half) % 2 == 0 ? g.first : g.second) = l;
    }
    std::size_t g = 0;
    for (const auto& [key, lanes] : groups) {
      if (p == 0) {
        pair[g] = lanes;
      } else if (pair[g] != lanes) {
        throw Error("generate_verilog: stage " + std::to_string(s) +
                    " pairs different lanes in different cycles (internal error)");
      }
      const std::int64_t rho = fft.rho_angle(s, key / L);
      angle[p][g] = forward ? rho : -rho;
      ++g;
    }
  }
  const unsigned W = c.W, T = c.T, TF = c.TF;
  emit_header(o, c, name, unit.description);
  o << "  " << c.name << "_valid #(.DEPTH(" << unit.latency << ")) valid_line (.clk(clk), .rst(rst), "
    << ".d(iv), .q(ov));\n";
  emit_phase_counter(o, c, "iv");
  const std::size_t twbus = G * 2 * T;
  if (multiplies) {
    o << "  reg [" << twbus - 1 << ":0] tw;  // butterfly g: re [2gT +: T], im [(2g+1)T +: T]\n"
      << "  always @(*) begin\n    case (phase)\n";
    for (std::size_t p = 0; p < per; ++p) {
      o << "      " << c.phase_bits << "'d" << p << ": begin";
      for (std::size_t g = 0; g < G; ++g) {
        const CWord t = fft.twiddle(angle[p][g]);
        o << " tw[" << 2 * g * T << " +: " << T << "] = " << literal(t.re, T) << ";"
          << " tw[" << (2 * g + 1) * T << " +: " << T << "] = " << literal(t.im, T) << ";";
      }
      o << " end\n";
    }
    o << "      default: tw = " << twbus << "'d0;\n    endcase\n  end\n";
    o << "  localparam signed [" << W + T << ":0] MUL_ROUND = "
      << (c.nearest ? literal(std::int64_t{1} << (TF - 1), W + T + 1) : std::to_string(W + T + 1) + "'sd0")
      << ";\n";
  }
  auto multiplier = [&](const std::string& in, const std::string& tws, const std::string& out) {
    // out = in with the digit-1 lane of every butterfly multiplied by its twiddle, rounded by
    // TF bits and wrapped to W bits; digit-0 lanes pass.
    o << "  wire [" << c.bus - 1 << ":0] " << out << ";\n";
    for (std::size_t g = 0; g < G; ++g) {
      const std::size_t l0 = pair[g].first, l1 = pair[g].second;
      const std::string n = out + "_" + std::to_string(g);
      o << "  assign " << out << "[" << 2 * l0 * W << " +: " << 2 * W << "] = " << in << "["
        << 2 * l0 * W << " +: " << 2 * W << "];\n"
        << "  wire signed [" << W - 1 << ":0] " << n << "_xr = " << c.re(in, l1) << ";\n"
        << "  wire signed [" << W - 1 << ":0] " << n << "_xi = " << c.im(in, l1) << ";\n"
        << "  wire signed [" << T - 1 << ":0] " << n << "_tr = " << tws << "[" << 2 * g * T
        << " +: " << T << "];\n"
        << "  wire signed [" << T - 1 << ":0] " << n << "_ti = " << tws << "[" << (2 * g + 1) * T
        << " +: " << T << "];\n"
        << "  wire signed [" << W + T << ":0] " << n << "_pr = " << n << "_xr * " << n << "_tr - "
        << n << "_xi * " << n << "_ti + MUL_ROUND;\n"
        << "  wire signed [" << W + T << ":0] " << n << "_pi = " << n << "_xr * " << n << "_ti + "
        << n << "_xi * " << n << "_tr + MUL_ROUND;\n"
        << "  wire signed [" << W + T << ":0] " << n << "_sr = " << n << "_pr >>> " << TF << ";\n"
        << "  wire signed [" << W + T << ":0] " << n << "_si = " << n << "_pi >>> " << TF << ";\n"
        << "  assign " << c.re(out, l1) << " = " << n << "_sr[" << W - 1 << ":0];\n"
        << "  assign " << c.im(out, l1) << " = " << n << "_si[" << W - 1 << ":0];\n";
    }
  };
  auto butterflies = [&](const std::string& in, const std::string& out) {
    o << "  wire [" << c.bus - 1 << ":0] " << out << ";\n";
    for (std::size_t g = 0; g < G; ++g) {
      const std::size_t l0 = pair[g].first, l1 = pair[g].second;
      const std::string n = out + "_" + std::to_string(g);
      for (const char* part : {"r", "i"}) {
        const bool real = part[0] == 'r';
        const std::string a = real ? c.re(in, l0) : c.im(in, l0);
        const std::string b = real ? c.re(in, l1) : c.im(in, l1);
        const std::string y0 = real ? c.re(out, l0) : c.im(out, l0);
        const std::string y1 = real ? c.re(out, l1) : c.im(out, l1);
        o << "  wire signed [" << W - 1 << ":0] " << n << "_a" << part << " = " << a << ";\n"
          << "  wire signed [" << W - 1 << ":0] " << n << "_b" << part << " = " << b << ";\n";
        if (forward) {
          o << "  wire signed [" << W << ":0] " << n << "_s" << part << " = " << n << "_a" << part
            << " + " << n << "_b" << part << ";\n"
            << "  wire signed [" << W << ":0] " << n << "_d" << part << " = " << n << "_a" << part
            << " - " << n << "_b" << part << ";\n"
            << "  assign " << y0 << " = " << n << "_s" << part << "[" << W - 1 << ":0];\n"
            << "  assign " << y1 << " = " << n << "_d" << part << "[" << W - 1 << ":0];\n";
        } else {
          const std::string rc = c.nearest ? std::to_string(W + 2) + "'sd1" : std::to_string(W + 2) + "'sd0";
          o << "  wire signed [" << W + 1 << ":0] " << n << "_s" << part << " = (" << n << "_a"
            << part << " + " << n << "_b" << part << " + " << rc << ") >>> 1;\n"
            << "  wire signed [" << W + 1 << ":0] " << n << "_d" << part << " = (" << n << "_a"
            << part << " - " << n << "_b" << part << " + " << rc << ") >>> 1;\n"
            << "  assign " << y0 << " = " << n << "_s" << part << "[" << W - 1 << ":0];\n"
            << "  assign " << y1 << " = " << n << "_d" << part << "[" << W - 1 << ":0];\n";
        }
      }
    }
  };
  auto delay = [&](const std::string& in, const std::string& out, std::size_t width,
                   std::uint64_t depth) {
    o << "  wire [" << width - 1 << ":0] " << out << ";\n"
      << "  " << c.name << "_delay #(.WIDTH(" << width << "), .DEPTH(" << depth << ")) " << out
      << "_line (.clk(clk), .d(" << in << "), .q(" << out << "));\n";
  };
  const std::uint64_t Lm = sc.multiplier_latency, La = sc.adder_latency;
  if (forward) {
    if (multiplies) {
      multiplier("id", "tw", "m");
      delay("m", "u", c.bus, Lm);
    } else {
      o << "  wire [" << c.bus - 1 << ":0] u = id;\n";
    }
    butterflies("u", "y");
    delay("y", "z", c.bus, La);
    o << "  assign od = z;\n";
  } else {
    butterflies("id", "y");
    delay("y", "z", c.bus, La);
    if (multiplies) {
      delay("tw", "twz", twbus, La);
      multiplier("z", "twz", "m");
      delay("m", "u", c.bus, Lm);
      o << "  assign od = u;\n";
    } else {
      o << "  assign od = z;\n";
    }
  }
  o << "endmodule\n\n";
}

bool valid_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  });
}

// The reserved words of IEEE 1800-2017 (SystemVerilog, Annex B), a superset of those of
// Verilog-2005 (IEEE 1364-2005): none may name a module, and Verilator reads the files as
// SystemVerilog. Sorted, for binary_search.
constexpr std::array<std::string_view, 248> reserved_words = {
    "accept_on", "alias", "always", "always_comb", "always_ff", "always_latch", "and", "assert",
    "assign", "assume", "automatic", "before", "begin", "bind", "bins", "binsof", "bit", "break",
    "buf", "bufif0", "bufif1", "byte", "case", "casex", "casez", "cell", "chandle", "checker",
    "class", "clocking", "cmos", "config", "const", "constraint", "context", "continue", "cover",
    "covergroup", "coverpoint", "cross", "deassign", "default", "defparam", "design", "disable",
    "dist", "do", "edge", "else", "end", "endcase", "endchecker", "endclass", "endclocking",
    "endconfig", "endfunction", "endgenerate", "endgroup", "endinterface", "endmodule",
    "endpackage", "endprimitive", "endprogram", "endproperty", "endsequence", "endspecify",
    "endtable", "endtask", "enum", "event", "eventually", "expect", "export", "extends", "extern",
    "final", "first_match", "for", "force", "foreach", "forever", "fork", "forkjoin", "function",
    "generate", "genvar", "global", "highz0", "highz1", "if", "iff", "ifnone", "ignore_bins",
    "illegal_bins", "implements", "implies", "import", "incdir", "include", "initial", "inout",
    "input", "inside", "instance", "int", "integer", "interconnect", "interface", "intersect",
    "join", "join_any", "join_none", "large", "let", "liblist", "library", "local", "localparam",
    "logic", "longint", "macromodule", "matches", "medium", "modport", "module", "nand",
    "negedge", "nettype", "new", "nexttime", "nmos", "nor", "noshowcancelled", "not", "notif0",
    "notif1", "null", "or", "output", "package", "packed", "parameter", "pmos", "posedge",
    "primitive", "priority", "program", "property", "protected", "pull0", "pull1", "pulldown",
    "pullup", "pulsestyle_ondetect", "pulsestyle_onevent", "pure", "rand", "randc", "randcase",
    "randsequence", "rcmos", "real", "realtime", "ref", "reg", "reject_on", "release", "repeat",
    "restrict", "return", "rnmos", "rpmos", "rtran", "rtranif0", "rtranif1", "s_always",
    "s_eventually", "s_nexttime", "s_until", "s_until_with", "scalared", "sequence", "shortint",
    "shortreal", "showcancelled", "signed", "small", "soft", "solve", "specify", "specparam",
    "static", "string", "strong", "strong0", "strong1", "struct", "super", "supply0", "supply1",
    "sync_accept_on", "sync_reject_on", "table", "tagged", "task", "this", "throughout", "time",
    "timeprecision", "timeunit", "tran", "tranif0", "tranif1", "tri", "tri0", "tri1", "triand",
    "trior", "trireg", "type", "typedef", "union", "unique", "unique0", "unsigned", "until",
    "until_with", "untyped", "use", "uwire", "var", "vectored", "virtual", "void", "wait",
    "wait_order", "wand", "weak", "weak0", "weak1", "while", "wildcard", "wire", "with", "within",
    "wor", "xnor", "xor"};

bool reserved_word(const std::string& s) {
  return std::binary_search(reserved_words.begin(), reserved_words.end(), std::string_view(s));
}

// The word widths the datapath has (FixedFftConfig::validate): the file formats hold 2W bits.
void check_word_bits(const char* fn, unsigned word_bits) {
  EXPECTS(word_bits >= 8 && word_bits <= 64,
          std::string(fn) + ": word_bits=" + std::to_string(word_bits) +
              " but expected 8..64 (the datapath's word widths)");
}

}  // namespace

VerilogDesign generate_verilog(const StreamingFft& datapath, const std::string& module_name) {
  const FixedFft& fft = datapath.transform();
  const FixedFftConfig& fc = fft.config();
  EXPECTS(fc.radix == 2, "generate_verilog: radix=" + std::to_string(fc.radix) +
                             " but the generator emits radix-2 datapaths only");
  EXPECTS(valid_identifier(module_name),
          "generate_verilog: module name '" + module_name +
              "' is not a Verilog identifier (letters, digits, _; a letter or _ first; at most 64)");
  EXPECTS(!reserved_word(module_name),
          "generate_verilog: module name '" + module_name +
              "' is a reserved word of Verilog or SystemVerilog; choose another name");
  Context c;
  c.name = module_name;
  c.W = fc.word_bits;
  c.T = fc.twiddle_width();
  c.TF = fc.twiddle_frac_bits();
  c.lanes = datapath.config().width;
  c.bus = 2 * c.W * c.lanes;
  c.per = static_cast<unsigned>(fft.size() / c.lanes);
  c.phase_bits = std::max(1u, log2u(c.per));
  c.nearest = fc.rounding == Rounding::Nearest;

  std::ostringstream o;
  o << "// Generated by torusgate fpga_fft: a streaming " << to_string(datapath.direction())
    << " FFT datapath, " << fc.describe() << ",\n"
    << "// " << c.lanes << " complex words per cycle, multiplier latency "
    << datapath.config().multiplier_latency << ", adder latency "
    << datapath.config().adder_latency << ", latency " << datapath.latency_formula()
    << " cycles, one transform every " << c.per << " cycles.\n"
    << "// Bus: lane l holds re in bits [2lW +: W] and im in [(2l+1)W +: W], W = " << c.W
    << ". Stream whole transforms back to back\n"
    << "// with in_valid high (natural order: cycle k carries points kw..kw+w-1); out_valid marks "
       "the outputs, in the same order.\n"
    << "// Synthesizable Verilog-2001. Do not edit: regenerate with `fpga_fft verilog`.\n"
    << "`timescale 1ns/1ps\n\n";
  emit_support(o, c);
  std::size_t index = 0;
  std::vector<std::string> names;
  for (const auto& unit : datapath.units()) {
    const std::string name = module_name + "_u" + std::to_string(index++);
    names.push_back(name);
    if (unit.kind == StreamingUnit::Kind::Permutation) {
      emit_permutation(o, c, name, unit);
    } else {
      emit_stage(o, c, name, unit, datapath);
    }
  }
  o << "module " << module_name << " (\n"
    << "  input  wire clk,\n  input  wire rst,  // synchronous, active high\n"
    << "  input  wire in_valid,\n  input  wire [" << c.bus - 1 << ":0] in_data,\n"
    << "  output wire out_valid,\n  output wire [" << c.bus - 1 << ":0] out_data\n);\n"
    << "  wire v0 = in_valid;\n  wire [" << c.bus - 1 << ":0] d0 = in_data;\n";
  for (std::size_t k = 0; k < names.size(); ++k) {
    o << "  wire v" << k + 1 << ";\n  wire [" << c.bus - 1 << ":0] d" << k + 1 << ";\n"
      << "  " << names[k] << " u" << k << " (.clk(clk), .rst(rst), .iv(v" << k << "), .id(d" << k
      << "), .ov(v" << k + 1 << "), .od(d" << k + 1 << "));\n";
  }
  o << "  assign out_valid = v" << names.size() << ";\n  assign out_data = d" << names.size()
    << ";\nendmodule\n";

  std::ostringstream tb;
  const std::uint64_t limit = datapath.latency_formula() + 4 * c.per + 64;
  tb << "// Testbench for " << module_name << " (generated): streams TRANSFORMS transforms from "
     << "input.hex back to back and\n// writes \"<cycle> <{im,re} hex>\" per output word to "
     << "output.txt; cycle 0 is the first input cycle.\n"
     << "// Run with +transforms=N (default 1); at most 64.\n"
     << "`timescale 1ns/1ps\nmodule tb_" << module_name << ";\n"
     << "  localparam integer W = " << c.W << ", LANES = " << c.lanes << ", PER = " << c.per
     << ", POINTS = " << fft.size() << ";\n"
     << "  reg clk = 1'b0;\n  always #5 clk = ~clk;\n  reg rst = 1'b1;\n"
     << "  reg in_valid = 1'b0;\n  reg [" << c.bus - 1 << ":0] in_data = " << c.bus << "'d0;\n"
     << "  wire out_valid;\n  wire [" << c.bus - 1 << ":0] out_data;\n"
     << "  " << module_name << " dut (.clk(clk), .rst(rst), .in_valid(in_valid), "
     << ".in_data(in_data), .out_valid(out_valid), .out_data(out_data));\n"
     << "  reg [" << 2 * c.W - 1 << ":0] words [0:64*POINTS-1];\n"
     << "  reg [" << c.bus - 1 << ":0] next;\n"
     << "  integer f, cycle, lane, emitted, transforms, blocks;\n"
     << "  initial begin\n"
     << "    if (!$value$plusargs(\"transforms=%d\", transforms)) transforms = 1;\n"
     << "    if (transforms < 1 || transforms > 64) begin\n"
     << "      $display(\"tb: +transforms must be 1..64\");\n      $finish;\n    end\n"
     << "    blocks = transforms * PER;\n"
     << "    $readmemh(\"input.hex\", words, 0, transforms * POINTS - 1);\n"
     << "    f = $fopen(\"output.txt\", \"w\");\n"
     << "    repeat (3) @(negedge clk);\n    rst = 1'b0;\n"
     << "    emitted = 0;\n    cycle = 0;\n"
     << "    while (emitted < blocks && cycle < blocks + " << limit << ") begin\n"
     << "      @(negedge clk);\n"
     << "      if (cycle < blocks) begin\n        in_valid = 1'b1;\n"
     << "        for (lane = 0; lane < LANES; lane = lane + 1)\n"
     << "          next[lane*2*W +: 2*W] = words[cycle*LANES + lane];\n"
     << "        in_data = next;  // one assignment of the whole bus\n"
     << "      end else begin\n        in_valid = 1'b0;\n      end\n"
     << "      #1;\n"
     << "      if (out_valid) begin\n"
     << "        for (lane = 0; lane < LANES; lane = lane + 1)\n"
     << "          $fwrite(f, \"%0d %h\\n\", cycle, out_data[lane*2*W +: 2*W]);\n"
     << "        emitted = emitted + 1;\n      end\n"
     << "      cycle = cycle + 1;\n    end\n"
     << "    $fclose(f);\n    $finish;\n  end\nendmodule\n";
  return {module_name, o.str(), tb.str()};
}

std::string format_vectors(const std::vector<std::vector<CWord>>& transforms, unsigned word_bits) {
  check_word_bits("format_vectors", word_bits);
  std::string out;
  for (const auto& t : transforms) {
    for (const auto& w : t) {
      EXPECTS(fits(w.re, word_bits) && fits(w.im, word_bits),
              "format_vectors: a word does not fit " + std::to_string(word_bits) + " bits");
      out += hex_word(w, word_bits);
      out += '\n';
    }
  }
  return out;
}

SimulatedOutput parse_simulation_output(const std::string& text, std::size_t transforms,
                                        std::size_t points, unsigned word_bits) {
  check_word_bits("parse_simulation_output", word_bits);
  EXPECTS(points >= 1, "parse_simulation_output: points=0 but a transform has at least 1");
  EXPECTS(transforms <= SIZE_MAX / points,
          "parse_simulation_output: transforms=" + std::to_string(transforms) + " of points=" +
              std::to_string(points) + " make 2^64 words or more");
  SimulatedOutput result;
  // The words as they come (no more than the text holds), arranged into transforms at the end:
  // nothing is allocated for the words the caller expects but the text lacks.
  std::vector<CWord> words;
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0, line_no = 0;
  const std::size_t total = transforms * points;
  const unsigned digits = (2 * word_bits + 3) / 4;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = "simulation output line " + std::to_string(line_no);
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || space == 0) throw FormatError(where + ": expected \"<cycle> <hex>\"");
    std::uint64_t cycle = 0;
    for (std::size_t i = 0; i < space; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(line[i])) || cycle > (1ull << 50)) {
        throw FormatError(where + ": the cycle is not a number");
      }
      cycle = cycle * 10 + static_cast<std::uint64_t>(line[i] - '0');
    }
    const std::string hex = line.substr(space + 1);
    if (hex.size() != digits) {
      throw FormatError(where + ": " + std::to_string(hex.size()) + " hex digits but a word has " +
                        std::to_string(digits) + " (undefined bits or a wrong width?)");
    }
    unsigned __int128 v = 0;
    for (const char ch : hex) {
      const int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                    : (ch >= 'a' && ch <= 'f')                   ? ch - 'a' + 10
                                                                 : -1;
      if (d < 0) throw FormatError(where + ": '" + std::string(1, ch) + "' is not a hex digit (x or z: an undefined output)");
      v = (v << 4) | static_cast<unsigned>(d);
    }
    if (n >= total) throw FormatError(where + ": more than the expected " + std::to_string(total) + " words");
    const unsigned __int128 mask = word_bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << word_bits) - 1;
    CWord w{wrap(static_cast<Wide>(v & mask), word_bits), wrap(static_cast<Wide>((v >> word_bits) & mask), word_bits)};
    if (n == 0) result.first_output_cycle = cycle;
    if (n == points) result.transform_interval = cycle - result.first_output_cycle;
    words.push_back(w);
    ++n;
  }
  if (n != total) {
    throw FormatError("simulation output: " + std::to_string(n) + " words but expected " +
                      std::to_string(total) + " (" + std::to_string(transforms) + " transforms of " +
                      std::to_string(points) + ")");
  }
  result.transforms.reserve(transforms);
  for (std::size_t k = 0; k < transforms; ++k) {
    const auto first = words.begin() + static_cast<std::ptrdiff_t>(k * points);
    result.transforms.emplace_back(first, first + static_cast<std::ptrdiff_t>(points));
  }
  return result;
}

}  // namespace torusgate::fpga_fft
