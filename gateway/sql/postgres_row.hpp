#pragma once
// One row of a PostgreSQL text-format result as the call's JSON object: column names are the keys;
// booleans, integers, floating-point and numeric values become JSON booleans and numbers, json and jsonb
// become JSON documents, everything else (and any value that does not convert) stays a string. Pure; runs
// on the call's I/O thread, so nothing in it recurses once per level of a document before the depth is
// checked.

#include <libpq-fe.h>
#include <nlohmann/json_fwd.hpp>

#include <cstddef>

namespace gateway {

// Row `row` of `res` into `out`. Returns why it cannot be one (its values exceed `limit` bytes, or a JSON
// value nests too deep), or nullptr.
const char* postgres_row_to_json(const PGresult* res, int row, std::size_t limit, nlohmann::json& out);

}  // namespace gateway
