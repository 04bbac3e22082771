//! The integration tests, linked as one binary: each file of `tests/suite/` is a module, and
//! helpers they share live in `tests/support/`. One binary links the library once instead of
//! once per file. Two stay binaries of their own: `tests/golden.rs`, so that re-blessing the
//! pinned simulator outputs is `STORMRIG_BLESS=1 cargo test --release --test golden`, and
//! `tests/sim_vs_live.rs`, whose live-versus-simulator comparison (peak concurrency at the
//! target) needs the machine to itself rather than beside the suite's other live runs.

mod support;

mod suite {
    mod adaptive_rate_limit;
    mod architecture;
    mod attempt_log;
    mod attempt_settling;
    mod aws_adaptive_conformance;
    mod aws_classic_conformance;
    mod aws_js_v3_conformance;
    mod aws_sdk_conformance;
    mod axios_retry_conformance;
    mod bench_smoke;
    mod budget_drain;
    mod budget_drain_live;
    mod bulkheads;
    mod check_advice;
    mod cli;
    mod connection_faults;
    mod csv_cells;
    mod display;
    mod docs;
    mod fault_api;
    mod fleets;
    mod fuzz_inputs;
    mod fuzz_scenarios;
    mod gates_diff;
    mod gates_eval;
    mod gates_junit;
    mod google_api_core_conformance;
    mod grpc_calls;
    mod grpc_layers;
    mod grpc_proxy;
    mod grpc_proxy_faults;
    mod grpc_real_client;
    mod hedging;
    mod hedging_live;
    mod hedging_per_try;
    mod hostile_files;
    mod hostile_input;
    mod hostile_output;
    mod hostile_run;
    mod hostile_shards;
    mod hostile_signals;
    mod hostile_work;
    mod idempotency_dedup;
    mod idempotency_live;
    mod lean_h1;
    mod live_run;
    mod llm_sdk_conformance;
    mod llm_sdk_hints;
    mod load_shedding;
    mod number_formats;
    mod one_line_run;
    mod pipeline;
    mod policy_api;
    mod protocols;
    mod provider_breakers;
    mod provider_bulkheads;
    mod provider_cost;
    mod provider_failover;
    mod provider_ladder;
    mod provider_money;
    mod provider_reports;
    mod provider_retry_after;
    mod provider_tokens;
    mod proxy_answered;
    mod proxy_h2_floods;
    mod proxy_local;
    mod proxy_nginx;
    mod proxy_protocol;
    mod recommendation;
    mod recorded_faults;
    mod recorded_load;
    mod recorded_proxies;
    mod report_html;
    mod report_layout;
    mod request_classes;
    mod retrodiction;
    mod scenario_errors;
    mod scenario_schedule;
    mod scenario_shipped;
    mod shape_errors;
    mod shards;
    mod sim_core;
    mod sim_topology;
    mod sizes;
    mod sweep;
    mod target_server;
    mod telemetry;
    mod telemetry_push;
    mod topology_live;
    mod topology_plan;
    mod toxiproxy_api;
    mod urllib3_conformance;
}
