// `kfactor demo`: every solver on a generated planted problem, quality and time.
#include "cli.hpp"

#include <kfactor/io/report_json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

namespace kfactor::cli {
namespace {

struct DemoOptions : OutputOptions {
  std::uint64_t seed = 42;
  std::vector<std::string> only;
};

const Registrar demo_command{Command{
    "demo", "factorize generated planted low-rank problems with every solver; print quality and time",
    [](CLI::App& cmd) -> std::function<void()> {
      auto o = std::make_shared<DemoOptions>();
      add_number(cmd, "--seed", o->seed, "random seed", seed_range);
      std::vector<std::string> names;
      for (const auto& demo : demo_registry()) names.push_back(demo.name);
      cmd.add_option("--only", o->only, "run only these solvers")->check(one_of(names));
      add_output_options(cmd, *o);
      return [o] {
        // --json: one object like every command's, the solvers' own reports in "demos".
        nlohmann::json all = nlohmann::json::array();
        double seconds = 0;
        if (!o->json) std::printf("%-8s %-10s %16s %-16s %10s\n", "solver", "backend", "problem", "metric", "seconds");
        for (const auto& demo : demo_registry()) {
          if (!o->only.empty() && std::find(o->only.begin(), o->only.end(), demo.name) == o->only.end()) continue;
          const Report r = demo.run(o->seed);
          seconds += r.seconds;
          if (o->json) {
            all.push_back(to_json(r));
            continue;
          }
          const auto& m = r.metrics.items.empty() ? std::pair<std::string, double>{"-", 0.0} : r.metrics.items[0];
          const std::string shape = std::to_string(r.rows) + "x" + std::to_string(r.cols);
          std::printf("%-8s %-10s %16s %-16s %10.3f   (%s = %.3g after %d iterations)\n", demo.name.c_str(),
                      r.backend.c_str(), shape.c_str(), m.first.c_str(), r.seconds, m.first.c_str(), m.second,
                      r.iterations);
        }
        if (o->json)
          std::cout
              << nlohmann::json{{"command", "demo"}, {"seed", o->seed}, {"seconds", seconds}, {"demos", all}}.dump()
              << std::endl;
      };
    }}};

}  // namespace
}  // namespace kfactor::cli
