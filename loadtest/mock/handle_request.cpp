#include "loadtest/mock/handle_request.hpp"

#include "loadtest/mock/control.hpp"
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

request_action control(std::string_view query, control_kind kind, path_registry& registry) {
  std::string error;
  const auto req = parse_control(query, kind, error);
  if (req) error = registry.configure(req->path, req->change, req->port);
  return error.empty() ? reply(200, "{}") : error_reply(400, error);
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
    if (path == "/__control" && !req.is_get && !req.is_post) return not_allowed();
    if (path == "/__stats") return reply(200, registry.stats_json());
    if (path == "/__reset") {
      registry.reset();
      return reply(200, "{}");
    }
    if (path == "/__mode") return control(query, control_kind::mode, registry);
    if (path == "/__control") return control(query, control_kind::control, registry);
    return error_reply(404, "not found");
  }

  if (path.size() < 2 || path[0] != '/' || !is_valid_path_name(path.substr(1))) {
    return error_reply(404, "not found");
  }
  if (!req.is_get && !req.is_post && !req.is_write) return not_allowed();
  auto sku = find_query_param(query, "sku");
  if (sku.malformed) return error_reply(400, "bad percent-encoding in sku");

  request_action act;
  act.downstream = true;
  act.name = path.substr(1);
  act.sku = std::move(sku.value);
  // "sku=SKU" alone, the common case, leaves nothing to echo, and no need to look again.
  const bool sku_alone = sku.present && query.size() == std::string_view("sku=").size() + sku.raw.size();
  act.query = sku_alone ? std::string_view{} : query;
  act.whole_query = query;
  act.ticket = registry.begin_request(act.name, req.headers, req.endpoint);
  return act;
}

}  // namespace mock
