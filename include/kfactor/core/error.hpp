#pragma once
/// \file
/// kfactor's exception hierarchy. The library throws; only drivers exit, with
/// the code each kind maps to (UsageError 2, InputError 3, RuntimeFailure 4).

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kfactor {

/// Base of every error kfactor throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  /// Process exit code a driver uses for this kind of error.
  [[nodiscard]] virtual int exit_code() const noexcept { return 1; }
};

/// Bad options or arguments (rank 0, shapes that do not fit, unknown names).
class UsageError : public Error {
 public:
  using Error::Error;
  [[nodiscard]] int exit_code() const noexcept override { return 2; }
};

/// Bad input data: malformed files, NaN/Inf, negative values where not
/// allowed, corrupt checkpoints. Carries the file and 1-based line when known.
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what) {}
  InputError(const std::string& file, std::int64_t line, const std::string& what)
      : Error(file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + what), file_(file), line_(line) {}
  [[nodiscard]] int exit_code() const noexcept override { return 3; }
  [[nodiscard]] const std::string& file() const noexcept { return file_; }
  [[nodiscard]] std::int64_t line() const noexcept { return line_; }

 private:
  std::string file_;
  std::int64_t line_ = 0;
};

/// The run could not proceed: device out of memory, MPI failure, I/O failure
/// while writing results or checkpoints.
class RuntimeFailure : public Error {
 public:
  using Error::Error;
  [[nodiscard]] int exit_code() const noexcept override { return 4; }
};

/// A RuntimeFailure because memory (host or device) could not be allocated.
/// The library turns every allocation failure it catches into this type, with
/// a message naming what it allocated and the sizes, so that callers can tell
/// "too big for this machine" from other failures without reading the text
/// (the Python package raises MemoryError for it). Same exit code as
/// RuntimeFailure.
class OutOfMemory : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

}  // namespace kfactor
