// CANOPY_TRACE_FORMAT=otf2: the same records as the JSON file (trace.cpp), written by
// world rank 0 as an OTF2 archive (Score-P's format, which Vampir and otf2-print read)
// through Debian's libotf2 (OTF2 3.0), in its serial mode: rank 0 writes every rank's
// location after gathering them.
//   - a location (a process, in one location group) per rank;
//   - a region per call name ("MPI_Allreduce ring", "MPI_Bcast native MPI") and per kind
//     of step ("canopy send", ...), entered and left at the measured times, steps nested
//     in their call;
//   - each send and receive step also as an MpiSend / MpiRecv event (receiver or sender,
//     the tag = the segment, the bytes) on one communicator of all ranks named for
//     Canopy's messages: a traced call's messages travel on its communicator's private
//     duplicate, and the trace knows its ranks by world rank, so world ranks name the
//     peers. The MpiRecv stands at the receive's posting (its completion falls in the
//     step that waits for the data), so a message's arrow may point back in time.
// Times: nanoseconds from the earliest aligned call start, clocks aligned as the JSON's.
#include "shim/trace.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace canopy::shim::trace {

namespace {

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) { return 0; }
OTF2_FlushCallbacks flush_callbacks = {pre_flush, post_flush};

// The archive's strings and regions, numbered as they are first asked for.
struct Definitions {
  std::map<std::string, OTF2_StringRef> strings;
  std::map<std::string, OTF2_RegionRef> regions;
  OTF2_StringRef string(const std::string& s) {
    const auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    const auto ref = static_cast<OTF2_StringRef>(strings.size());
    strings.emplace(s, ref);
    return ref;
  }
  OTF2_RegionRef region(const std::string& name) {
    const auto it = regions.find(name);
    if (it != regions.end()) return it->second;
    const auto ref = static_cast<OTF2_RegionRef>(regions.size());
    string(name);
    regions.emplace(name, ref);
    return ref;
  }
};

}  // namespace

std::string write_otf2(const std::string& directory, const std::vector<std::vector<Call>>& calls,
                       const std::vector<std::vector<Step>>& steps, const std::vector<double>& offsets) {
  const int ranks = static_cast<int>(calls.size());
  const auto [origin, last] = aligned_span(calls, offsets);
  auto ns = [&](int r, double t) {
    return static_cast<OTF2_TimeStamp>(std::llround(std::max(0.0, (t + offsets[r] - origin) * 1e9)));
  };
  OTF2_Archive* archive = OTF2_Archive_Open(directory.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024,
                                            4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!archive) return "cannot create an OTF2 archive in " + directory + " (does traces.otf2 exist there already?)";
  OTF2_Archive_SetFlushCallbacks(archive, &flush_callbacks, nullptr);
  OTF2_Archive_SetSerialCollectiveCallbacks(archive);
  Definitions defs;
  const OTF2_CommRef comm = 0;
  std::vector<std::uint64_t> events(static_cast<std::size_t>(ranks), 0);
  bool ok = OTF2_Archive_OpenEvtFiles(archive) == OTF2_SUCCESS;
  for (int r = 0; ok && r < ranks; ++r) {
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, static_cast<OTF2_LocationRef>(r));
    if (!w) {
      ok = false;
      break;
    }
    std::uint64_t& n = events[r];
    std::size_t s = 0;  // steps are in call order on each rank
    for (std::uint32_t k = 0; k < calls[r].size(); ++k) {
      const Call& c = calls[r][k];
      const OTF2_RegionRef call_region = defs.region(call_name(c));
      OTF2_TimeStamp now = ns(r, c.start);
      OTF2_EvtWriter_Enter(w, nullptr, now, call_region);
      ++n;
      for (; s < steps[r].size() && steps[r][s].call == k; ++s) {
        const Step& st = steps[r][s];
        const OTF2_RegionRef region = defs.region(std::string("canopy ") + trace::name(st.kind));
        // Timestamps never go back on a location (a step's clock read may round below
        // its call's).
        const OTF2_TimeStamp begin = std::max(now, ns(r, st.start));
        const OTF2_TimeStamp end = std::max(begin, ns(r, st.end));
        OTF2_EvtWriter_Enter(w, nullptr, begin, region);
        if (st.kind == Kind::Send && st.peer >= 0)
          OTF2_EvtWriter_MpiSend(w, nullptr, begin, static_cast<std::uint32_t>(st.peer), comm,
                                 static_cast<std::uint32_t>(std::max(st.segment, 0)), static_cast<std::uint64_t>(st.bytes));
        if (st.kind == Kind::Recv && st.peer >= 0)
          OTF2_EvtWriter_MpiRecv(w, nullptr, end, static_cast<std::uint32_t>(st.peer), comm,
                                 static_cast<std::uint32_t>(std::max(st.segment, 0)), static_cast<std::uint64_t>(st.bytes));
        OTF2_EvtWriter_Leave(w, nullptr, end, region);
        n += (st.kind == Kind::Send || st.kind == Kind::Recv) && st.peer >= 0 ? 3 : 2;
        now = end;
      }
      OTF2_EvtWriter_Leave(w, nullptr, std::max(now, ns(r, c.end)), call_region);
      ++n;
    }
    ok = OTF2_Archive_CloseEvtWriter(archive, w) == OTF2_SUCCESS;
  }
  ok = OTF2_Archive_CloseEvtFiles(archive) == OTF2_SUCCESS && ok;
  // Every location's (empty) local definitions, then the global ones.
  ok = ok && OTF2_Archive_OpenDefFiles(archive) == OTF2_SUCCESS;
  for (int r = 0; ok && r < ranks; ++r) {
    OTF2_DefWriter* d = OTF2_Archive_GetDefWriter(archive, static_cast<OTF2_LocationRef>(r));
    ok = d && OTF2_Archive_CloseDefWriter(archive, d) == OTF2_SUCCESS;
  }
  ok = ok && OTF2_Archive_CloseDefFiles(archive) == OTF2_SUCCESS;
  OTF2_GlobalDefWriter* g = ok ? OTF2_Archive_GetGlobalDefWriter(archive) : nullptr;
  if (g) {
    const OTF2_StringRef machine = defs.string("machine"), node = defs.string("job"), world = defs.string("Canopy's messages (world ranks)"),
                         locations = defs.string("ranks");
    std::vector<OTF2_StringRef> rank_names;
    for (int r = 0; r < ranks; ++r) rank_names.push_back(defs.string("rank " + std::to_string(r)));
    for (const auto& [name, ref] : defs.regions) defs.string(name);
    const OTF2_StringRef empty = defs.string("");
    OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, static_cast<std::uint64_t>(std::llround((last - origin) * 1e9)) + 1,
                                              OTF2_UNDEFINED_TIMESTAMP);
    std::vector<std::pair<OTF2_StringRef, std::string>> ordered;
    for (const auto& [text, ref] : defs.strings) ordered.emplace_back(ref, text);
    std::sort(ordered.begin(), ordered.end());
    for (const auto& [ref, text] : ordered) OTF2_GlobalDefWriter_WriteString(g, ref, text.c_str());
    std::vector<std::pair<OTF2_RegionRef, std::string>> regions;
    for (const auto& [name, ref] : defs.regions) regions.emplace_back(ref, name);
    std::sort(regions.begin(), regions.end());
    for (const auto& [ref, name] : regions)
      OTF2_GlobalDefWriter_WriteRegion(g, ref, defs.strings[name], defs.strings[name], empty,
                                       name.rfind("MPI_", 0) == 0 ? OTF2_REGION_ROLE_COLL_ONE2ALL : OTF2_REGION_ROLE_FUNCTION,
                                       name.rfind("MPI_", 0) == 0 ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_USER,
                                       OTF2_REGION_FLAG_NONE, empty, 0, 0);
    OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, node, machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    for (int r = 0; r < ranks; ++r) {
      OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<OTF2_LocationGroupRef>(r), rank_names[r],
                                              OTF2_LOCATION_GROUP_TYPE_PROCESS, 0, OTF2_UNDEFINED_LOCATION_GROUP);
      OTF2_GlobalDefWriter_WriteLocation(g, static_cast<OTF2_LocationRef>(r), rank_names[r],
                                         OTF2_LOCATION_TYPE_CPU_THREAD, events[r], static_cast<OTF2_LocationGroupRef>(r));
    }
    std::vector<std::uint64_t> members(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r) members[r] = static_cast<std::uint64_t>(r);
    OTF2_GlobalDefWriter_WriteGroup(g, 0, locations, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                    OTF2_GROUP_FLAG_NONE, static_cast<std::uint32_t>(ranks), members.data());
    OTF2_GlobalDefWriter_WriteGroup(g, 1, world, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                    static_cast<std::uint32_t>(ranks), members.data());
    OTF2_GlobalDefWriter_WriteComm(g, comm, world, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
  }
  const bool closed = OTF2_Archive_Close(archive) == OTF2_SUCCESS;
  if (!ok || !g || !closed) return "writing the OTF2 archive in " + directory + " failed";
  return "";
}

}  // namespace canopy::shim::trace
