#pragma once
/// \file
/// Outputs left distributed: each rank writes its own part of a result to
/// its own file, so that no rank ever holds the whole (needs a build with
/// KFACTOR_HAVE_MPI). One path names all parts (part_path()); the parts of
/// one run form one output set across the ranks
/// (io::OutputSet::across_processes), published together once every rank
/// wrote its part (write_parts()).

#include <kfactor/config.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <kfactor/distributed/collective.hpp>
#include <kfactor/io/write.hpp>

#include <mpi.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kfactor::distributed {

/// The file rank `rank` writes for the output `path`: every `{rank}` in
/// `path` replaced by the rank's number (`/scratch/{rank}/p.mtx`), or, when
/// `path` has none, `.rankR` inserted before the file name's extension (the
/// part from its last dot, a leading dot not counting) or appended to a
/// name without one: `p.mtx` -> `p.rank0.mtx`, `out/p` -> `out/p.rank0`,
/// `run.d/.p` -> `run.d/.p.rank0`.
inline std::string part_path(const std::string& path, int rank) {
  const std::string r = std::to_string(rank);
  static constexpr std::string_view placeholder = "{rank}";
  if (path.find(placeholder) != std::string::npos) {
    std::string out;
    std::size_t from = 0;
    for (std::size_t at; (at = path.find(placeholder, from)) != std::string::npos; from = at + placeholder.size())
      out += path.substr(from, at - from) + r;
    return out + path.substr(from);
  }
  const std::size_t slash = path.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || dot <= name) return path + ".rank" + r;
  return path.substr(0, dot) + ".rank" + r + path.substr(dot);
}

/// Collective over `comm`: each rank writes its own part of an output that
/// stays distributed, by calling `write(part, options)` with part =
/// part_path(path, rank) and `options` the io::OutputOptions of member
/// `member.rankR` of one output set across the ranks, so every part carries
/// the same `kfactor-set` stamp and io::verify_output_set() on all parts
/// checks that they are the whole of one run. `inputs` are the run's input
/// files (no part may replace one). The parts are published together: every
/// rank writes and syncs its temporary, the ranks agree that all succeeded,
/// then each renames its own into place. An error on any rank (a folder
/// that does not exist, a full disk) ends every rank with that error, the
/// lowest failing rank's (agree()), with no part of this run published and
/// every earlier file as it was. Returns this rank's part's path.
template <class Write>
std::string write_parts(MPI_Comm comm, const std::string& path, const std::string& member,
                        const std::vector<std::string>& inputs, Write&& write) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // One set id for all parts: rank 0's.
  std::string id = rank == 0 ? io::new_output_set_id() : std::string();
  int length = static_cast<int>(id.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, comm);
  id.resize(static_cast<std::size_t>(length));
  MPI_Bcast(id.data(), length, MPI_CHAR, 0, comm);
  std::vector<std::string> members;
  members.reserve(static_cast<std::size_t>(size));
  for (int p = 0; p < size; ++p) members.push_back(member + ".rank" + std::to_string(p));
  auto set = agree(comm, [&] { return io::OutputSet::across_processes(id, inputs, members); });
  const std::string mine = part_path(path, rank);
  agree(comm, [&] { write(mine, set[members[static_cast<std::size_t>(rank)]]); });
  agree(comm, [&] { set.publish(); });
  return mine;
}

}  // namespace kfactor::distributed

#endif  // KFACTOR_HAVE_MPI
