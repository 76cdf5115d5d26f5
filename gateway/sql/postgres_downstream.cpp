#include "gateway/sql/postgres_downstream.hpp"

#include "gateway/sql/postgres_pool.hpp"
#include "gateway/sql/postgres_query.hpp"

namespace gateway {

postgres_downstream::postgres_downstream(const downstream_settings& settings)
    : sql_downstream(settings), pool_(std::make_unique<postgres_pool>(settings_, slots_, stats_)) {}

postgres_downstream::~postgres_downstream() = default;

call_result postgres_downstream::run_query(std::size_t slot, std::vector<std::optional<std::string>> values,
                                           const call_request& request, async_semaphore::permit permit,
                                           boost::asio::yield_context yield) {
  auto query = run_postgres_query(pool_->connection(slot), values, settings_.max_response_bytes,
                                  request.cancel, settings_.name, yield);
  switch (query.then) {
    case after_query::idle:
      slots_.put_idle(slot);
      break;
    case after_query::broken:
      slots_.put_broken(slot);
      break;
    case after_query::cancel_on_server:
      pool_->cancel_on_server(slot, std::move(permit));
      break;
  }
  return std::move(query.result);
}

}  // namespace gateway
