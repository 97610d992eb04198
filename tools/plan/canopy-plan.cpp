// canopy-plan: the planner on the command line. Builds a schedule for a reduce, an allreduce or a
// broadcast, validates it, simulates it under a cost model and prints it; or compares
// every algorithm's predicted time.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "planner/describe.h"
#include "planner/registry.h"
#include "planner/schedule_json.h"
#include "planner/segments.h"
#include "planner/staged.h"
#include "planner/select.h"
#include "planner/simulate.h"
#include "planner/topology_json.h"
#include "planner/tree.h"
#include "planner/validate.h"
#include "tools/plan/compare_plot.h"
#include "tools/plan/figure2.h"
#include "tools/plan/grid_sim.h"

using namespace canopy::planner;

namespace {

constexpr int kBadInput = 2;  // the exit status for anything the user gave that we reject

// The whole schedule (every rank's steps) is shown up to this many steps as its
// algorithm estimates them (whole_steps_of; a tree's 2^22 ranks x segments): at
// 16 bytes a step, some hundreds of MB. Beyond, --rank shows one rank's steps.
constexpr std::int64_t kWholeScheduleSteps = std::int64_t{1} << 24;

const char* const kExamples = R"(
Models (--model):
  hockney:alpha=A,beta=B[,gamma=G,copy=C,direct=D,direct_fixed=S,port=P,port_fixed=F,duplex=half|full,
                         overlap=0|1]
      alpha-beta-gamma of 001 (Langou): seconds per message, per byte sent, per byte
      reduced. duplex=half and overlap=0 (the defaults) are Langou's unidirectional system.
      copy: per byte copied locally; direct, direct_fixed: a cross-memory-attach copy's
      seconds per byte (default 1.35 x copy) and per copy (default 1.4e-6; --cma).
      port: seconds per byte a message holds the sender's and receiver's ports (their
      cards' rate), its latency in flight; port_fixed: seconds more a message, with port;
      default: the whole transfer (a --topology link between sites far apart, or one whose
      trains showed it: see reduce-scatter-gather-wide).
  overlap:d=D,c=C
      the (d, c) model of 000 (Canon & Antoniu): transfers cost d, reductions c,
      overlapping; one indivisible element per rank (use --bytes 1).
  plogp:L=L,g=BYTES:SECONDS/BYTES:SECONDS/...[,gamma=G,port=P,port_fixed=F]   or   plogp:FILE
      pLogP of 004: a message arrives after L + g(m) and holds both ports for g(m)
      (with port=, for port_fixed + port x bytes where that is shorter);
      g interpolated between the sizes given. FILE: lines "L 2e-6", "65536 1e-5", ...
  default
      Canopy's built-in model (what the shim uses without CANOPY_MODEL).

Topology (--topology FILE): the network beyond one node, as JSON (CANOPY_TOPOLOGY's form):
  {"ranks": ["s0", "s0", "s1", "s1"],                    a cluster (site) label per rank
   "nodes": ["a", "a", "b", "c"],                         optional: a node label per rank
   "links": {"s0-s1": "hockney:alpha=1e-4,beta=4e-8",    between two clusters, both ways
             "s1->s0": "hockney:alpha=1e-4,beta=8e-8",   one way (wins over "s0-s1")
             "s1": "hockney:alpha=2e-5,beta=1e-9",       between two nodes of s1
             "default": "hockney:alpha=5e-5,beta=8e-9"}, every pair not named
   "slowdown": [1, 1, 2, 1],                              optional: rank 2 sends at half speed
   "packages": [0, 1, 0, 0],                              optional: package (socket) per rank,
   "package_link": "hockney:alpha=3e-6,beta=2e-10"}       within its node, and the link between
  Messages within a node follow --model (between two of its packages package_link),
  messages between nodes the link of their clusters; reductions and copies follow
  --model. hierarchical goes by package on a node of several packages. Every pair of clusters, and every
  cluster on more than one node, needs a link (or a "default"). -p defaults to the
  file's number of ranks. --json adds "topology", which canopy-view times the schedule on.

Examples:
  canopy-plan reduce -p 13 --algo binomial --model overlap:d=1,c=2
  canopy-plan reduce -p 8 --bytes 1048576 --segment-bytes 65536 --json
  canopy-plan reduce -p 1048576 --bytes 4194304 --element-bytes 8 --rank 12345   (one rank's steps)
  canopy-plan bcast -p 64 --bytes 65536 --compare
  canopy-plan allreduce -p 16 --bytes 8 --compare
  canopy-plan allreduce -p 6 --bytes 1048576 --algo rabenseifner --rank 5
  canopy-plan reduce -p 16 --compare --svg reduce-16.svg --min-bytes 8 --max-bytes 16777216
  canopy-plan reduce -p 8 --bytes 65536 --json | canopy-view - --svg schedule.svg
  canopy-plan bcast --bytes 1048576 --topology sites.json --compare
  canopy-plan figure2 --svg figure2.svg --csv figure2.csv
  canopy-plan grid-sim --max-clusters 10 --svg figure7.svg     (Figure 7 of 004; 50: Figure 8)

Scale: prices come from formulas where the model allows (planner/select.h), so
--compare and --rank answer in milliseconds at millions of ranks. The whole schedule
(the default output, --steps, --json) is shown up to 16777216 steps as its algorithm
estimates them (4194304 ranks x segments for a tree; reduce-scatter-gather's exchange
has p x p messages); beyond that canopy-plan says so and names --rank.

Bad input (an option, a model, an algorithm, a topology file, a file that cannot be
written) prints one line naming it on stderr and exits with status 2.
)";

struct Options {
  std::string operation;
  int ranks = 8;
  int root = 0;
  std::int64_t bytes = 8;
  std::int64_t element_bytes = 1;
  std::string algorithm = "auto";
  std::int64_t segment_bytes = -1;
  std::string model = "default";
  std::string topology_file;
  std::shared_ptr<const Topology> topology;  // read from topology_file
  bool non_commutative = false;
  bool shm = false;
  bool cma = false;
  bool json = false;
  bool compare = false;
  bool steps = false;
  int rank = -1;  // >= 0: print this rank's view only
  int max_n = 10000;
  std::string svg;
  std::string csv;
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = 16 << 20;
  int min_clusters = 2;
  int max_clusters = 10;
  int draws = 10000;
  std::uint64_t seed = 1;
};

Problem make_problem(const Options& o) {
  Problem p;
  if (!parse_collective(o.operation, p.collective)) throw CLI::ValidationError("operation", "not a collective");
  p.nranks = o.ranks;
  p.root = o.root;
  p.element_bytes = o.element_bytes;
  if (o.bytes % o.element_bytes != 0)
    throw CLI::ValidationError("--bytes", "must be a multiple of --element-bytes");
  p.count = o.bytes / o.element_bytes;
  p.commutative = !o.non_commutative;
  p.model = o.model == "default" ? default_model() : parse_model(o.model);
  p.topology = o.topology;
  if (!o.shm) return p;
  p = with_staging_ring(p);
  p.direct_access = o.cma;
  return p;
}

// What a topology file leaves out, for the one-line refusal: the first pair and how
// to fix it. The shim measures missing links; this tool has nothing to measure with.
std::string missing_link_text(const TopologyFile& file) {
  const auto [a, b] = file.missing.front();
  const std::vector<std::string>& name = file.topology.labels;
  const std::string more =
      file.missing.size() > 1 ? " (and " + std::to_string(file.missing.size() - 1) + " more pair(s))" : "";
  if (a == b)
    return "no link between two nodes of cluster \"" + name[a] + "\"" + more + "; add a \"" + name[a] +
           "\" link, or a \"default\" one";
  return "no link from cluster \"" + name[a] + "\" to \"" + name[b] + "\"" + more + "; add \"" + name[a] + "-" +
         name[b] + "\" (or \"" + name[a] + "->" + name[b] + "\"), or a \"default\" link";
}

// --topology FILE: reads it into o.topology; without -p, its ranks are the problem's.
void use_topology(Options& o, bool ranks_given) {
  TopologyFile file;
  try {
    file = read_topology_file(o.topology_file);
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError("--topology", e.what());
  }
  if (!file.missing.empty()) throw CLI::ValidationError("--topology", o.topology_file + ": " + missing_link_text(file));
  if (ranks_given && file.topology.nranks() != o.ranks)
    throw CLI::ValidationError("--topology", o.topology_file + " describes " + std::to_string(file.topology.nranks()) +
                                                 " ranks, -p is " + std::to_string(o.ranks));
  o.ranks = file.topology.nranks();
  o.topology = std::make_shared<const Topology>(std::move(file.topology));
}

nlohmann::json ranks_json(const Schedule& s) {
  const Tree t = tree_of(s);
  nlohmann::json out = nlohmann::json::array();
  for (int r = 0; r < s.nranks; ++r)
    out.push_back({{"rank", r}, {"parent", t.parent[r]}, {"children", t.children[r]}});
  return out;
}

// How a price reads: seconds (or the (d, c) model's units), and whether it is the
// simulator's makespan or an estimate (planner/select.h).
std::string price_text(const Problem& problem, const Choice& c) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", c.predicted);
  std::string out = buf;
  out += problem.model.kind == "overlap" ? " (model units)" : " s = " + format_seconds(c.predicted);
  return out + (c.exact ? "" : " (estimate)");
}

// The segments `choice` cuts the message into: the layout asked for, or, for an
// algorithm that cuts its own (Algorithm::cut_segment_bytes: reduce-scatter-gather's
// slices, the ring's whole entries), the layout of the schedule it builds, read off
// the root's view (those algorithms plan at most a few thousand ranks).
std::vector<Segment> segments_of(const Problem& problem, const Choice& choice) {
  const Algorithm* a = find_algorithm(problem.collective, choice.algorithm);
  if (a && a->cut_segment_bytes) return build_view(problem, choice, problem.root).segments;
  Problem q = problem;
  q.segment_bytes = choice.segment_bytes;
  return problem_segments(q);
}

// One rank's view: its steps and the predicted time, at any p.
int print_view(const Options& o, const Problem& problem, const Choice& best) {
  const Schedule view = build_view(problem, best, o.rank);
  if (o.json) {
    nlohmann::json out = {{"algorithm", view.algorithm},
                          {"makespan", best.predicted},
                          {"exact", best.exact},
                          {"segments", view.segments.size()},
                          {"model", problem.model.spec()},
                          {"rank", o.rank},
                          {"schedule", schedule_to_json(view)}};
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << summarize(view) << "\n"
            << "model " << problem.model.spec() << "\n"
            << (problem.topology ? "topology " + describe_topology(*problem.topology) + "\n" : "")
            << "makespan " << price_text(problem, best) << "\n"
            << describe_schedule(view, true);
  return 0;
}

int print_plan(const Options& o, const Problem& problem) {
  Request request;
  request.algorithm = o.algorithm;
  request.segment_bytes = o.segment_bytes;
  const Choice best = rank_choices(problem, request).front();
  if (o.rank >= 0) return print_view(o, problem, best);
  // Every rank's steps take memory and time: past the limit, one rank's view is what
  // can be shown.
  const std::int64_t steps = whole_steps_of(problem, best);
  if (steps > kWholeScheduleSteps)
    throw CLI::ValidationError("--ranks", "the whole " + best.algorithm + " schedule of " +
                                              std::to_string(problem.nranks) + " ranks (about " + std::to_string(steps) +
                                              " steps) is over the " + std::to_string(kWholeScheduleSteps) +
                                              " steps this tool shows; use --rank R for one rank's steps, "
                                              "or --compare for every algorithm's price");
  const Plan plan = make_plan(problem, request);
  if (o.json) {
    nlohmann::json out = {{"algorithm", plan.schedule.algorithm},
                          {"makespan", plan.predicted},
                          {"exact", best.exact},
                          {"segments", plan.schedule.segments.size()},
                          {"model", problem.model.spec()},
                          {"ranks", ranks_json(plan.schedule)},
                          {"schedule", schedule_to_json(plan.schedule)}};
    if (problem.topology) out["topology"] = topology_to_json(*problem.topology);
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::cout << summarize(plan.schedule) << "\n"
            << "model " << problem.model.spec() << "\n"
            << (problem.topology ? "topology " + describe_topology(*problem.topology) + "\n" : "")
            << "makespan " << price_text(problem, best) << "\n"
            << describe_schedule(plan.schedule, o.steps);
  return 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  const bool ok = out && std::fputs(text.c_str(), out) >= 0;
  if (out && std::fclose(out) != 0) throw std::runtime_error("cannot write " + path);
  if (!ok) throw std::runtime_error("cannot write " + path);
}

// Figure 2 of 000: prints the worst ratios, writes the curves as CSV and/or SVG.
int print_figure2(const Options& o) {
  const canopy::tools::Figure2 f = canopy::tools::figure2_curves(o.max_n);
  auto worst = [&](const std::vector<double>& r) {
    const auto it = std::max_element(r.begin(), r.end());
    return std::make_pair(*it, f.n[it - r.begin()]);
  };
  const auto [b, bn] = worst(f.binomial_ratio);
  const auto [fr, fn] = worst(f.fibonacci_ratio);
  std::printf("Figure 2 of 000 for 2 <= n <= %d:\n", o.max_n);
  std::printf("  binomial strategy / optimal, d = c:         worst %.4f at n = %d (Theorem 18 bound 2)\n", b, bn);
  std::printf("  Fibonacci strategy / optimal, min(d,c) = 0: worst %.4f at n = %d (Theorem 19 bound 2)\n", fr, fn);
  for (const auto& [path, text] : {std::pair{o.csv, canopy::tools::figure2_csv(f)},
                                   std::pair{o.svg, canopy::tools::figure2_svg(f)}})
    if (!path.empty()) {
      write_file(path, text);
      std::printf("wrote %s\n", path.c_str());
    }
  return 0;
}

// 004 section 6 (Figures 7 and 8): the mean makespan of every grid broadcast
// heuristic per number of clusters; the table, and optionally CSV and SVG.
int print_grid_sim(const Options& o) {
  const canopy::tools::GridSimTable t =
      canopy::tools::grid_sim_table(o.min_clusters, o.max_clusters, o.draws, o.seed);
  std::printf("Mean makespan (s) of the grid broadcast heuristics of 004 section 6: %d draws per row, seed %llu,\n"
              "L 1-15 ms, g 100-600 ms per pair of clusters, T 20-3000 ms per cluster (Table 3), root cluster 0\n",
              o.draws, static_cast<unsigned long long>(o.seed));
  std::fputs(canopy::tools::grid_sim_text(t).c_str(), stdout);
  std::printf("(%.2f s)\n", t.seconds);
  for (const auto& [path, text] : {std::pair{o.csv, canopy::tools::grid_sim_csv(t)},
                                   std::pair{o.svg, canopy::tools::grid_sim_svg(t)}})
    if (!path.empty()) {
      write_file(path, text);
      std::printf("wrote %s\n", path.c_str());
    }
  return 0;
}

int print_comparison(const Options& o, const Problem& problem) {
  // Sizes first, so that a bad range is reported before anything is printed.
  const auto sizes = o.svg.empty() ? std::vector<std::int64_t>{}
                                   : canopy::tools::doubling_sizes(o.min_bytes, o.max_bytes, problem.element_bytes);
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json) std::printf("%-25s %9s %14s %14s\n", "algorithm", "segments", "segment bytes", "makespan");
  for (const std::string& name : algorithm_names(problem.collective)) {
    Request request;
    request.algorithm = name;
    request.segment_bytes = o.segment_bytes;
    if (find_algorithm(problem.collective, name)->global && problem.nranks > kGlobalPlanningLimit) {
      const std::string why = "builds its tree over every rank; auto leaves it out above " +
                              std::to_string(kGlobalPlanningLimit) + " ranks (plan it with --algo " + name + ")";
      if (o.json) rows.push_back({{"algorithm", name}, {"left_out", why}});
      else std::printf("%-25s left out: %s\n", name.c_str(), why.c_str());
      continue;
    }
    try {
      // Priced, not built (only an algorithm that cuts its own layout builds the root's
      // view, to show it): the comparison works at any number of ranks.
      const Choice c = rank_choices(problem, request).front();
      const std::vector<Segment> layout = segments_of(problem, c);
      const auto segments = static_cast<std::int64_t>(layout.size());
      const std::int64_t seg = layout.empty() ? 0 : layout.front().count * problem.element_bytes;
      if (o.json)
        rows.push_back({{"algorithm", name}, {"segments", segments}, {"segment_bytes", seg},
                        {"makespan", c.predicted}, {"exact", c.exact}});
      else
        std::printf("%-25s %9lld %14lld %14.6g%s\n", name.c_str(), static_cast<long long>(segments),
                    static_cast<long long>(seg), c.predicted, c.exact ? "" : " (estimate)");
    } catch (const PlanError& e) {
      if (o.json) rows.push_back({{"algorithm", name}, {"declined", e.what()}});
      else std::printf("%-25s declined: %s\n", name.c_str(), e.what());
    }
  }
  if (o.json) {
    nlohmann::json out{{"model", problem.model.spec()}, {"algorithms", rows}};
    if (problem.topology) out["topology"] = topology_to_json(*problem.topology);
    std::cout << out.dump() << "\n";
  }
  if (!o.svg.empty()) {
    const auto comparison = canopy::tools::compare_over_sizes(problem, o.segment_bytes, sizes);
    write_file(o.svg, canopy::tools::comparison_svg(comparison));
    // With --json, stdout stays one JSON document.
    (o.json ? std::cerr : std::cout) << "wrote " << o.svg << " (" << comparison.curves.size() << " algorithms, "
                                     << sizes.size() << " sizes)\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"canopy-plan: build, validate and simulate a Canopy schedule"};
  app.footer(kExamples);
  app.add_option("operation", o.operation,
                 "reduce, bcast, allreduce, figure2 (the curves of Figure 2 of 000), or grid-sim (the grid "
                 "broadcast heuristics simulated as in 004 section 6)")
      ->required()
      ->check(CLI::IsMember({"reduce", "bcast", "allreduce", "figure2", "grid-sim"}));
  app.add_option("-p,--ranks", o.ranks, "number of ranks")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--root", o.root, "root rank")->capture_default_str();
  app.add_option("--bytes", o.bytes, "message size in bytes")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--element-bytes", o.element_bytes, "size of one element (segments hold whole elements)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--algo", o.algorithm, "a registered algorithm, or auto")->capture_default_str();
  app.add_option("--segment-bytes", o.segment_bytes, "pipeline segment size; 0 = none; default: the planner chooses");
  app.add_option("--model", o.model, "cost model: hockney:..., overlap:..., plogp:..., or default")
      ->capture_default_str();
  app.add_option("--topology", o.topology_file,
                 "a JSON file: clusters, nodes and links of the network, slower ranks, packages (see below); "
                 "-p defaults to its number of ranks")
      ->type_name("FILE");
  app.add_flag("--non-commutative", o.non_commutative, "the reduction must combine operands in rank order");
  app.add_flag("--shm", o.shm,
               "each node with Canopy's staging ring (2 x its ranks entries of 64 KiB, at least 16; 8 of 128 KiB for 2 "
               "ranks): the shm-* algorithms "
               "compete on one node, and plan the node levels of hierarchical and grid-* with --topology");
  app.add_flag("--cma", o.cma,
               "with --shm: the node's ranks can also copy straight between their buffers (cross-memory attach, "
               "CANOPY_CMA), so cma-bcast competes");
  app.add_flag("--json", o.json, "print JSON instead of text");
  app.add_flag("--compare", o.compare, "print every algorithm's predicted time");
  app.add_flag("--steps", o.steps, "also print every rank's steps");
  app.add_option("--rank", o.rank,
                 "print (with --json, emit) only this rank's steps, its view of the schedule, and the predicted "
                 "time: planned in time and memory that follow that rank's steps, at any -p up to 2^24")
      ->type_name("R");
  app.add_option("--max-n", o.max_n, "figure2: largest n")->check(CLI::Range(2, 10000000))->capture_default_str();
  app.add_option("--min-clusters", o.min_clusters, "grid-sim: fewest clusters")->check(CLI::Range(2, 1000))
      ->capture_default_str();
  app.add_option("--max-clusters", o.max_clusters, "grid-sim: most clusters (004 Figure 7: 10, Figure 8: 50)")
      ->check(CLI::Range(2, 1000))->capture_default_str();
  app.add_option("--draws", o.draws, "grid-sim: random grids per number of clusters")
      ->check(CLI::Range(1, 100000000))->capture_default_str();
  app.add_option("--seed", o.seed, "grid-sim: random seed (std::mt19937_64)")->capture_default_str();
  app.add_option("--svg", o.svg,
                 "figure2, grid-sim: write the curves as an SVG chart to this file; --compare: plot every "
                 "algorithm's predicted time against message size (log-log) into this file");
  app.add_option("--min-bytes", o.min_bytes, "--compare --svg: smallest message size (then doubling)")
      ->capture_default_str();
  app.add_option("--max-bytes", o.max_bytes, "--compare --svg: largest message size")->capture_default_str();
  app.add_option("--csv", o.csv, "figure2, grid-sim: write the curves as CSV to this file");
  app.add_flag_callback("--list", [] {
    for (const auto& a : algorithms()) std::cout << to_string(a.collective) << " " << a.name << ": " << a.summary << "\n";
    std::exit(0);
  }, "list the registered algorithms and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; a bad option exits 2 with one line, like every other bad input.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "canopy-plan: " << e.what() << "\n";
    return kBadInput;
  }
  try {
    if (o.operation == "figure2") return print_figure2(o);
    if (o.operation == "grid-sim") return print_grid_sim(o);
    if (!o.svg.empty() && !o.compare)
      throw CLI::ValidationError("--svg", "needs --compare (or figure2, grid-sim); canopy-view draws one schedule");
    if (!o.topology_file.empty()) use_topology(o, app.count("--ranks") > 0);
    if (o.root < 0 || o.root >= o.ranks) throw CLI::ValidationError("--root", "must be between 0 and ranks-1");
    if (app.count("--rank") && (o.rank < 0 || o.rank >= o.ranks))
      throw CLI::ValidationError("--rank", std::to_string(o.rank) + " is not a rank: allowed 0.." +
                                               std::to_string(o.ranks - 1));
    if (o.rank >= 0 && o.compare) throw CLI::ValidationError("--rank", "shows one schedule, --compare prices them all");
    const int per_node = o.topology ? largest_node(*o.topology) : o.ranks;
    if (o.shm && !staging_ring_allowed(per_node))
      throw CLI::ValidationError("--shm", "Canopy offers its staging ring where a node holds 2.." +
                                              std::to_string(kMaxStagingRanks) + " of the ranks, not " +
                                              std::to_string(per_node));
    if (o.cma && !o.shm)
      throw CLI::ValidationError("--cma", "needs --shm: Canopy offers cross-memory attach beside the staging ring");
    const Problem problem = make_problem(o);
    return o.compare ? print_comparison(o, problem) : print_plan(o, problem);
  } catch (const std::exception& e) {
    std::cerr << "canopy-plan: " << e.what() << "\n";
    return kBadInput;
  }
}
