# workerd configuration for the example Worker (run.sh starts it). The Worker's modules are
# embedded from src/ and build/ (run.sh copies the wasm module there); the socket and the
# upstream are given when workerd starts:
#   RESILIX_UPSTREAM=http://127.0.0.1:PORT workerd serve config.capnp \
#       --socket-addr http=127.0.0.1:0 --control-fd 3
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "resilix-example", worker = .worker),
    # The Worker's fetch() goes out through this network service. "local" admits loopback
    # only: the flaky upstream the test starts, and nothing beyond this machine.
    (name = "loopback", network = (allow = ["local"])),
  ],
  sockets = [
    (name = "http", address = "127.0.0.1:8787", http = (), service = "resilix-example"),
  ],
);

const worker :Workerd.Worker = (
  modules = [
    (name = "worker.mjs", esModule = embed "src/worker.mjs"),
    (name = "resilix.mjs", esModule = embed "src/resilix.mjs"),
    (name = "resilix.wasm", wasm = embed "build/resilix.wasm"),
  ],
  compatibilityDate = "2026-11-01",
  bindings = [
    (name = "UPSTREAM", fromEnvironment = "RESILIX_UPSTREAM"),
  ],
  globalOutbound = "loopback",
);
