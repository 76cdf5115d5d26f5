// The fan-out of a graph route (aggregate_route::graph): calls that wait for others (`after`), run only
// when a condition holds (`when`), or run once per element of an earlier answer's array (`for_each`).
// Only a graph route comes here; a flat one starts every call at once (fanout.cpp) and has no graph_.
//
// Slots: one per call (index i of the route's calls), then max_items per for_each call
// (for_each_settings::first_slot), each element's call in a slot of its own, with its own deadline,
// cancel_source, breaker ticket and result.
//
// Who starts what: only run()'s coroutine, never a call's completion. A call's report wakes run() (for a
// graph route every report does), and run() then calls advance_graph(), which starts every call whose
// calls in `after` have all reported, and more elements of a for_each call as earlier ones end. A call
// that may not be sent ends at once, without I/O, as:
//   skipped      its `when` is false, or a call in its `after` was skipped: left out of the answer;
//   dependency   a call in its `after` has no answer (it failed, or was answered by its fallback), or a
//                value its templates use is missing (null, an object or an array where a scalar is
//                needed), or a header value it takes holds a control character; for_each: no array;
//   timeout      its deadline passed while it waited (it is never sent then);
//   cancelled    the request settled (a required call failed, the client left) while it waited.
// A stale or cached answer is an answer: calls that need it go on with its values.
// Ownership: graph_state belongs to the fan-out; the values and header fields of a slot stay put from its
// start until run() returns (a call's request points into them).

#include "gateway/aggregate/fanout.hpp"

#include "gateway/codec/json_path.hpp"
#include "gateway/downstream/call_trace.hpp"

#include <algorithm>

namespace gateway {

struct fanout::graph_state {
  struct slot {
    clock::time_point begun{};
    // The values of the call's references ("product.seller.id" -> "17"), as text.
    boost::container::small_vector<std::pair<std::string_view, std::string>, 4> values;
    std::string headers;  // the call's header fields with its `set` templates expanded
    std::string element;  // a for_each element's JSON text
  };
  struct items {
    std::size_t count = 0;   // elements run (at most max_items)
    std::size_t next = 0;    // the next element to start
    bool truncated = false;  // the array had more than max_items elements
  };
  std::vector<slot> slots;
  std::vector<items> for_each;  // per call
};

void fanout::graph_deleter::operator()(graph_state* g) const {
  delete g;
}

namespace {

// `when`: present, and neither empty nor false (nor null, [] or {}).
bool truthy(const json_value_view& v) {
  switch (v.kind) {
    case json_kind::missing:
    case json_kind::null:
      return false;
    case json_kind::boolean:
      return v.text == "true";
    case json_kind::string:
      return v.text.size() > 2;  // "" is empty
    case json_kind::number:
      return true;
    case json_kind::object:
    case json_kind::array: {
      const auto inner = v.text.substr(1, v.text.size() - 2);
      return inner.find_first_not_of(" \t\r\n") != std::string_view::npos;
    }
  }
  return false;
}

// A header field's value may hold visible characters, spaces and tabs only (RFC 9110 5.5).
bool field_value(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t') || u == 0x7f;
  });
}

}  // namespace

clock::time_point fanout::begun(std::size_t slot) const {
  return graph_->slots[slot].begun;
}

std::string_view fanout::rendered_headers(std::size_t slot) const {
  return graph_->slots[slot].headers;
}

bool fanout::items_ran(std::size_t index) const {
  return graph_->for_each[index].count > 0;
}

std::string_view fanout::value_of(std::size_t slot, std::string_view name) const {
  for (const auto& [ref, value] : graph_->slots[slot].values) {
    if (ref == name) return value;
  }
  return {};
}

void fanout::start_graph() {
  const auto& route = *request_->route;
  const auto n = route.calls.size();
  graph_.reset(new graph_state);
  graph_->slots.resize(calls_.size());
  graph_->for_each.resize(n);
  // Every call waits until advance_graph() starts it; the elements' slots are unused until their
  // for_each call runs.
  for (std::size_t i = 0; i < calls_.size(); ++i)
    calls_[i] = i < n ? call_state::waiting : call_state::reported;
  pending_ = n;
  // A call's own timeout counts from its start (begin_waiting_call, start_items): until then only the
  // request's deadline bounds its wait.
  std::fill(deadlines_.begin(), deadlines_.end(), request_->deadline);
  advance_graph();
}

void fanout::graph_start_failed() {
  for (auto& s : calls_) {
    if (s != call_state::waiting) continue;
    s = call_state::never_started;
    --pending_;
  }
  cancel_pending(cancel_reason::settled);
}

void fanout::advance_graph() {
  const auto& route = *request_->route;
  const auto n = route.calls.size();
  // Once the answer is decided (a required call failed, an answer passed), nothing more starts: run()
  // settles, and the calls still waiting end there, never sent.
  for (bool progress = true; progress && decider_ == npos;) {
    progress = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (calls_[i] == call_state::waiting) {
        const auto& after = route.calls[i].after_index;
        if (std::any_of(after.begin(), after.end(),
                        [&](std::size_t d) { return calls_[d] != call_state::reported; }))
          continue;
        begin_waiting_call(i);
        progress = true;
      } else if (calls_[i] == call_state::pending && route.calls[i].for_each) {
        auto& items = graph_->for_each[i];
        const auto before = items.next;
        start_items(i);
        if (items.next != before) progress = true;
        const auto first = route.calls[i].for_each->first_slot;
        if (items.next == items.count &&
            std::all_of(calls_.begin() + static_cast<std::ptrdiff_t>(first),
                        calls_.begin() + static_cast<std::ptrdiff_t>(first + items.count),
                        [](call_state s) { return s == call_state::reported; })) {
          finish_for_each(i);
          progress = true;
        }
      }
    }
  }
}

void fanout::begin_waiting_call(std::size_t index) {
  const auto& call = request_->route->calls[index];
  const auto now = clock::now();
  graph_->slots[index].begun = now;
  calls_[index] = call_state::pending;
  // A call's own timeout counts from its start (within the request's deadline).
  if (call.timeout) deadlines_[index] = std::min(request_->deadline, now + *call.timeout);
  if (request_->call_traces != nullptr && !call.after.empty())
    request_->call_traces[index].started_after(now, now - started_, call.after);
  for (const auto d : call.after_index) {
    if (results_[d].skipped())
      return finish_unsent(index, call_outcome::skipped, "a call it needs was skipped");
  }
  for (const auto d : call.after_index) {
    if (!results_[d].has_body())
      return finish_unsent(index, call_outcome::dependency, "a call it needs has no answer");
  }
  if (const auto& when = call.when) {
    const bool on =
        when->on_param
            ? !(*request_->params)[when->param].empty() && (*request_->params)[when->param] != "false"
            : truthy(find_json(results_[when->field.call].body.text, when->field.path));
    if (!on) return finish_unsent(index, call_outcome::skipped, "when");
  }
  if (call.for_each) return begin_for_each(index);
  if (!resolve_values(index, {}))
    return finish_unsent(index, call_outcome::dependency, "a value it uses is missing");
  render_header_templates(index);
  if (!call.header_templates.empty() && graph_->slots[index].headers.empty())
    return finish_unsent(index, call_outcome::dependency, "a header value it takes is not valid");
  start_call(index);
}

void fanout::begin_for_each(std::size_t index) {
  const auto& each = *request_->route->calls[index].for_each;
  const auto source = find_json(results_[each.source.call].body.text, each.source.path);
  if (source.kind != json_kind::array)
    return finish_unsent(index, call_outcome::dependency, "no array to run for");
  auto& items = graph_->for_each[index];
  std::size_t k = 0;
  const auto total = for_each_element(source, each.max_items, [&](const json_value_view& element) {
    graph_->slots[each.first_slot + k++].element = std::string(element.text);
  });
  items.count = k;
  items.next = 0;
  for (std::size_t e = 0; e < k; ++e) calls_[each.first_slot + e] = call_state::waiting;
  pending_ += k;
  items.truncated = total > each.max_items;
  // Ends in advance_graph() once every element has reported (at once when there is none).
}

void fanout::start_items(std::size_t index) {
  const auto& each = *request_->route->calls[index].for_each;
  auto& items = graph_->for_each[index];
  const auto first = each.first_slot;
  const auto running = static_cast<std::size_t>(
      std::count(calls_.begin() + static_cast<std::ptrdiff_t>(first),
                 calls_.begin() + static_cast<std::ptrdiff_t>(first + items.next), call_state::pending));
  for (auto free = each.concurrency > running ? each.concurrency - running : 0;
       free > 0 && items.next < items.count; --free) {
    const auto slot = first + items.next++;
    if (calls_[slot] != call_state::waiting) continue;  // ended while it waited (its deadline)
    auto& s = graph_->slots[slot];
    s.begun = clock::now();
    calls_[slot] = call_state::pending;
    if (const auto& timeout = request_->route->calls[index].timeout)
      deadlines_[slot] = std::min(request_->deadline, s.begun + *timeout);
    if (!resolve_values(slot, s.element)) {
      finish_unsent(slot, call_outcome::dependency, "a value it uses is missing");
      continue;
    }
    render_header_templates(slot);
    if (!request_->route->calls[index].header_templates.empty() && s.headers.empty()) {
      finish_unsent(slot, call_outcome::dependency, "a header value it takes is not valid");
      continue;
    }
    start_call(slot);
  }
}

// The for_each call's own result, once every element has reported: ok when every element is, else the
// first degraded element's outcome (so a required for_each fails with it).
void fanout::finish_for_each(std::size_t index) {
  const auto& each = *request_->route->calls[index].for_each;
  const auto count = graph_->for_each[index].count;
  call_result result;
  result.outcome = call_outcome::ok;
  result.contacted = false;
  for (std::size_t e = 0; e < count; ++e) {
    const auto& r = results_[each.first_slot + e];
    if (r.ok()) continue;
    result.outcome = r.outcome;
    result.error = r.error;
    result.detail = r.detail;
    result.status = r.status;
    break;
  }
  result.truncated = graph_->for_each[index].truncated;
  result.items = static_cast<std::uint16_t>(count);
  result.latency = clock::now() - graph_->slots[index].begun;
  call_finished(index, std::move(result));
}

bool fanout::resolve_values(std::size_t slot, std::string_view element) {
  const auto& call = owner(slot);
  auto& values = graph_->slots[slot].values;
  values.clear();
  for (const auto& ref : call.references) {
    const std::string_view doc =
        ref.call == call_reference::item_of_call ? element : std::string_view(results_[ref.call].body.text);
    auto text = scalar_text(find_json(doc, ref.path));
    if (!text || (ref.segment && text->empty()) ||
        (ref.short_value && text->size() > call_reference::max_short))
      return false;
    values.emplace_back(ref.text, std::move(*text));
  }
  return true;
}

// The call's header fields with its `set` templates: its rendered fields, then each template's field.
// Left empty when a value holds a character a field may not (the call is then not sent).
void fanout::render_header_templates(std::size_t slot) {
  const auto& call = owner(slot);
  if (call.header_templates.empty()) return;
  const auto call_index = owner_index(slot);
  auto& out = graph_->slots[slot].headers;
  out.clear();
  if (request_->headers != nullptr) out = request_->headers[call_index].headers;
  for (const auto& t : call.header_templates) {
    out += "\r\n";
    out += t.name;
    out += ": ";
    const auto start = out.size();
    for (const auto& [is_ref, text] : t.pieces) out += is_ref ? value_of(slot, text) : std::string_view(text);
    if (!field_value(std::string_view(out).substr(start))) {
      out.clear();
      return;
    }
  }
}

void fanout::expire_waiting(clock::time_point now) {
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    if (calls_[i] != call_state::waiting || deadlines_[i] > now) continue;
    calls_[i] = call_state::pending;
    finish_unsent(i, call_outcome::timeout, "deadline");
  }
}

void fanout::finish_waiting(cancel_reason why) {
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    if (calls_[i] != call_state::waiting) continue;
    calls_[i] = call_state::pending;
    cancels_[i].request_cancel(why);
    finish_unsent(i, why == cancel_reason::deadline ? call_outcome::timeout : call_outcome::cancelled,
                  "not started");
  }
  // A for_each call whose elements have all ended ends too.
  const auto& route = *request_->route;
  for (std::size_t i = 0; i < route.calls.size(); ++i) {
    if (calls_[i] != call_state::pending || !route.calls[i].for_each) continue;
    const auto first = route.calls[i].for_each->first_slot;
    const auto count = graph_->for_each[i].count;
    if (std::all_of(calls_.begin() + static_cast<std::ptrdiff_t>(first),
                    calls_.begin() + static_cast<std::ptrdiff_t>(first + count),
                    [](call_state s) { return s == call_state::reported; }))
      finish_for_each(i);
  }
}

}  // namespace gateway
