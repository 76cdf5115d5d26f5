#pragma once
// The body of an OTLP/HTTP trace export (Content-Type application/x-protobuf): an
// ExportTraceServiceRequest of opentelemetry-proto (collector/trace/v1/trace_service.proto) holding one
// ResourceSpans (resource attribute service.name) with one ScopeSpans (scope "gateway") and every span
// of `records`. Field numbers follow opentelemetry-proto's trace.proto, common.proto and resource.proto
// (v1); tests/tracing/ checks the output against the official definitions. Pure.

#include "gateway/trace/trace_record.hpp"

#include <span>
#include <string>
#include <string_view>

namespace gateway {

std::string encode_export_request(std::span<const trace_record> records, std::string_view service_name);

}  // namespace gateway
