#pragma once
// The restart refusal every solver's checkpoint owes: a restart whose options
// differ in one that decides the iterates is refused with a UsageError
// naming that option and both values. Written once here; each solver's test
// lists its options and how to change each.
#include <kfactor/core/error.hpp>
#include <kfactor/io/checkpoint.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kfactor::test {

/// One option change: the name option_values() gives the option, and a
/// change of its value.
template <class Options>
using OptionChange = std::pair<const char*, std::function<void(Options&)>>;

/// For every change: `base` with the change must record another value of the
/// option (else the case would test nothing), and load_checkpoint(path,
/// state, meta_of(changed)) of the checkpoint saved with meta_of(base) must
/// throw a UsageError naming the option with the recorded and the new value.
template <class Options, class State, class MetaOf>
void expect_restart_refused(const std::string& path, State& state, const Options& base, MetaOf&& meta_of,
                            const std::vector<OptionChange<Options>>& changes) {
  const auto recorded = meta_of(base).options;
  for (const auto& [name, change] : changes) {
    SCOPED_TRACE(name);
    Options changed = base;
    change(changed);
    const CheckpointMeta meta = meta_of(changed);
    ASSERT_TRUE(meta.options.count(name)) << "option_values() has no '" << name << "'";
    ASSERT_NE(meta.options.at(name), recorded.at(name)) << "the change leaves '" << name << "' as it was";
    try {
      load_checkpoint(path, state, meta);
      ADD_FAILURE() << "restart with another " << name << " accepted";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string(name) + " = " + recorded.at(name)), std::string::npos) << what;
      EXPECT_NE(what.find(std::string(name) + " = " + meta.options.at(name)), std::string::npos) << what;
    }
  }
}

}  // namespace kfactor::test
