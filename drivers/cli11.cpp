// CLI11's compiled part, built once: the driver is compiled with CLI11_COMPILE,
// so each command file includes only CLI11's declarations (header-only CLI11
// costs about 10 s of compile time in every file that includes it).
#include <CLI/CLI.hpp>

#include <CLI/impl/App_inl.hpp>
#include <CLI/impl/Argv_inl.hpp>
#include <CLI/impl/Config_inl.hpp>
#include <CLI/impl/Encoding_inl.hpp>
#include <CLI/impl/ExtraValidators_inl.hpp>
#include <CLI/impl/Formatter_inl.hpp>
#include <CLI/impl/Option_inl.hpp>
#include <CLI/impl/Split_inl.hpp>
#include <CLI/impl/StringTools_inl.hpp>
#include <CLI/impl/Validators_inl.hpp>
