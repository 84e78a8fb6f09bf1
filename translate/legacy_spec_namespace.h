// Transitional alias `sparrow::spec` = `sparrow::translate`, the old name of
// this namespace, for the two files that are being split concurrently and may
// change only their include lines until that split merges
// (server/jobs/job_manager.cc, server/store/sqlite_store.cc). Afterwards,
// write translate:: there and delete this header.
#ifndef SPARROW_TRANSLATE_LEGACY_SPEC_NAMESPACE_H_
#define SPARROW_TRANSLATE_LEGACY_SPEC_NAMESPACE_H_

namespace sparrow {
namespace translate {}
namespace spec = translate;
}  // namespace sparrow

#endif  // SPARROW_TRANSLATE_LEGACY_SPEC_NAMESPACE_H_
