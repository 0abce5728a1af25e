// upstream.mjs: a flaky HTTP upstream on loopback that logs every request it sees.
//
// Its script is a phase the test switches: `flaky` answers every 5th request 503 with
// `Retry-After: 1`, `outage` answers every request so, `healthy` answers 200. Each answer
// leaves after LATENCY_MS, so requests can overlap (the half-open check needs that to mean
// anything). The log holds, per request: the id and attempt number the Worker stamped, whether
// it was a half-open probe, when it arrived and when its answer left (ms since 1970, sub-ms),
// the status and the Retry-After sent. Requests for /api/hang are never answered (logged
// apart, in `hung`).
import http from 'node:http';

export const LATENCY_MS = 5;
export const RETRY_AFTER_S = 1;

const clock = () => performance.timeOrigin + performance.now();

export function startUpstream() {
  const upstream = { log: [], hung: [], phase: 'flaky', arrivals: 0, server: null, url: '' };
  upstream.server = http.createServer((req, res) => {
    if (req.url.startsWith('/api/hang')) {
      // Never answered: the Worker's request for it is cancelled by its client.
      upstream.hung.push({ arrival: clock(), attempt: Number(req.headers['x-resilix-attempt'] ?? 0) });
      req.resume();
      return;
    }
    const entry = {
      id: req.headers['x-request-id'] ?? '',
      attempt: Number(req.headers['x-resilix-attempt'] ?? 0),
      probe: req.headers['x-resilix-probe'] === '1',
      arrival: clock(),
      phase: upstream.phase,
      sent: NaN,
      status: 200,
      retryAfterS: null,
    };
    upstream.arrivals += 1;
    if (entry.phase === 'outage' || (entry.phase === 'flaky' && upstream.arrivals % 5 === 0)) {
      entry.status = 503;
      entry.retryAfterS = RETRY_AFTER_S;
    }
    upstream.log.push(entry);
    req.resume();
    setTimeout(() => {
      const headers = { 'content-type': 'text/plain' };
      if (entry.retryAfterS !== null) headers['retry-after'] = String(entry.retryAfterS);
      entry.sent = clock(); // before the bytes leave, so never later than the Worker reads them
      res.writeHead(entry.status, headers);
      res.end(entry.status === 200 ? `item ${req.url}\n` : 'overloaded\n');
    }, LATENCY_MS);
  });
  return new Promise((resolve, reject) => {
    upstream.server.once('error', reject);
    upstream.server.listen(0, '127.0.0.1', () => {
      upstream.url = `http://127.0.0.1:${upstream.server.address().port}`;
      resolve(upstream);
    });
  });
}
