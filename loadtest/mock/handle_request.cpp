#include "loadtest/mock/handle_request.hpp"

#include "gateway/core/duration.hpp"
#include "loadtest/mock/replies.hpp"

namespace mock {
namespace {

request_action reply(unsigned status, std::string body) {
  request_action act;
  act.status = status;
  act.body = std::move(body);
  return act;
}

request_action error_reply(unsigned status, std::string_view message) {
  std::string body = R"({"error":)";
  append_json_string(body, message);
  body += '}';
  return reply(status, std::move(body));
}

request_action not_allowed() {
  // The method may be HEAD, whose reply carries no body: closing keeps the framing unambiguous.
  auto act = error_reply(405, "method not allowed");
  act.close = true;
  return act;
}

request_action change_mode(std::string_view query, path_registry& registry) {
  const auto path = find_query_param(query, "path");
  const auto how = find_query_param(query, "mode");
  const auto delay_text = find_query_param(query, "delay");
  if (!path.present || path.malformed || !is_valid_path_name(path.value)) {
    return error_reply(400, "bad or missing path");
  }
  const auto parsed_mode = how.malformed ? std::nullopt : parse_mode(how.value);
  if (!how.present || !parsed_mode) return error_reply(400, "bad or missing mode");
  std::optional<microseconds> delay;
  if (delay_text.present) {
    delay = delay_text.malformed ? std::nullopt : gateway::parse_duration(delay_text.value);
    if (!delay) return error_reply(400, "bad delay");
  }
  if (!registry.configure(path.value, *parsed_mode, delay)) return error_reply(400, "too many paths");
  return reply(200, "{}");
}

}  // namespace

request_action handle_request(const request_view& req, path_registry& registry) {
  const auto question = req.target.find('?');
  const std::string_view path = req.target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view{} : req.target.substr(question + 1);

  if (path.starts_with("/__")) {
    if (path == "/__stats" || path == "/__reset" || path == "/__mode") {
      if (!req.is_get) return not_allowed();
    }
    if (path == "/__stats") return reply(200, registry.stats_json());
    if (path == "/__reset") {
      registry.reset();
      return reply(200, "{}");
    }
    if (path == "/__mode") return change_mode(query, registry);
    return error_reply(404, "not found");
  }

  if (path.size() < 2 || path[0] != '/' || !is_valid_path_name(path.substr(1))) {
    return error_reply(404, "not found");
  }
  if (!req.is_get) return not_allowed();
  auto sku = find_query_param(query, "sku");
  if (sku.malformed) return error_reply(400, "bad percent-encoding in sku");

  request_action act;
  act.downstream = true;
  act.name = path.substr(1);
  act.sku = std::move(sku.value);
  act.ticket = registry.begin_request(act.name, req.headers);
  return act;
}

}  // namespace mock
