//! One scenario run: the file's clients calling through real pipelines into the file's
//! upstream, on a simulated timeline, recorded in buckets of time.
//!
//! * Open clients: a Poisson process at `rate × profile(t)` (thinning from the profile's
//!   largest scale). Closed clients: `users` users, of whom `round(users × profile(t))` are
//!   active; each calls, waits for the call to end, thinks, calls again.
//! * Each attempt goes through its instance's pipeline (`Stack::admit`), one network hop,
//!   the [`Server`], one hop back, and is settled with the server's verdict, or with
//!   `Timeout` when the pipeline's deadline (attempt timeout or call deadline) fires first.
//! * Calls start in `[0, duration)`, then the run drains; the series cover `[0, duration)`.
//!
//! Every random draw comes from a stream of the master seed (one per open client, one per
//! closed user, one for the server), and events at one instant run in the order they were
//! scheduled, so a run is a pure function of the file, the pipeline and the seed.

use std::time::{Duration, Instant as WallClock};

use resilix::Verdict;
use resilix::call::{CallOptions, Next, Stop};
use resilix::permit::Env;
use resilix::random::SeededRandom;
use resilix::time::Instant;

use super::file::{ClientKind, Scenario, ThinkDist};
use super::pipeline::Gauges;
use super::server::{Arrival, Job, Server};
use crate::net::Delay;
use crate::observer::Tally;
use crate::queue::EventQueue;
use crate::rng::{Purpose, exponential, secs, stream};
use crate::stack::Stack;

/// What happened to one client group in one bucket.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GroupBucket {
    /// Calls started.
    pub calls: u64,
    /// Calls that ended (answered, given up or refused), by when they ended.
    pub ended: u64,
    pub succeeded: u64,
    /// Calls the pipeline refused before any attempt reached the network.
    pub refused: u64,
    /// Seconds from start to end of each call that ended.
    pub latencies: Vec<f32>,
}

/// Everything recorded in one bucket of time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bucket {
    /// Attempts the pipelines admitted.
    pub sent: u64,
    /// Attempts that reached the upstream.
    pub arrivals: u64,
    /// Attempts settled `Timeout` by a deadline.
    pub timeouts: u64,
    /// Requests the upstream finished serving.
    pub served: u64,
    /// Of those, requests whose caller had stopped waiting.
    pub wasted: u64,
    /// ∫ queue length dt, ∫ busy servers dt, ∫ servers dt (seconds).
    pub queue_area: f64,
    pub busy_area: f64,
    pub capacity_area: f64,
    pub queue_max: u64,
    /// Per policy gauge (see [`Gauges`]): the sum of samples and their count.
    pub gauge_sum: [f64; 4],
    pub gauge_n: [u32; 4],
    pub groups: Vec<GroupBucket>,
}

pub struct RunOutput {
    pub bucket: Duration,
    pub buckets: Vec<Bucket>,
    pub groups: Vec<String>,
    /// Which gauges the pipeline has (breaker, limiter, throttler, budget).
    pub has_gauge: [bool; 4],
    pub events: u64,
    /// When the last event happened (the drain's end).
    pub end: Instant,
}

enum Ev {
    Arrive(usize),
    Send(usize),
    AtServer(usize, u64),
    Finish(Job),
    Reply(usize, u64, Verdict),
    Deadline(usize, u64),
    Sample,
    Capacity,
}

struct Source {
    group: usize,
    /// Closed: the user's number within its group.
    user: Option<u32>,
    instance: usize,
    /// When calls start: apart from the draws the calls make, so two pipelines on one seed
    /// are offered the same open-loop arrivals.
    arrivals: SeededRandom,
    /// The policies' draws (jitter, shedding) and the network's.
    rng: SeededRandom,
}

struct Slot<'a, S: Stack + 'a> {
    source: usize,
    call: S::Call<'a>,
    attempt: Option<S::Attempt<'a>>,
    /// The id of the outstanding (or last) attempt.
    attempt_id: u64,
    started: Instant,
}

/// Called with the fraction of simulated time done, every few thousand events.
pub type Progress<'p> = &'p mut dyn FnMut(f64);

/// Integrates the queue length, busy servers and capacity over time, bucket by bucket.
struct Areas {
    since: f64,
    queue: f64,
    busy: f64,
    capacity: f64,
}

impl Areas {
    fn advance(&mut self, to: f64, width: f64, buckets: &mut [Bucket]) {
        let mut t = self.since;
        while t < to {
            let mut idx = (t / width) as usize;
            // `t / width` can round below a boundary `t` sits on; without this the end of
            // the bucket would be `t` itself and the loop would never advance.
            while (idx + 1) as f64 * width <= t {
                idx += 1;
            }
            if idx >= buckets.len() {
                break;
            }
            let next = ((idx + 1) as f64 * width).min(to);
            let dt = next - t;
            let b = &mut buckets[idx];
            b.queue_area += self.queue * dt;
            b.busy_area += self.busy * dt;
            b.capacity_area += self.capacity * dt;
            t = next;
        }
        self.since = to.max(self.since);
    }
}

pub fn run<'a, S: Stack>(
    sc: &Scenario,
    stacks: &'a [S],
    gauges: &dyn Fn(&S, Instant) -> Gauges,
    master: u64,
    progress: Progress<'_>,
) -> Result<RunOutput, String> {
    let net: Delay = sc.network()?;
    let width = sc.bucket();
    let duration = sc.run.duration.0;
    let n_buckets = (duration.as_secs_f64() / width.as_secs_f64()).ceil() as usize;
    let groups: Vec<(&String, &super::file::Client)> = sc.clients.iter().collect();
    let mut buckets = vec![
        Bucket {
            groups: vec![GroupBucket::default(); groups.len()],
            ..Bucket::default()
        };
        n_buckets
    ];
    let end = Instant::ZERO.saturating_add(duration);
    let wf = width.as_secs_f64();
    let bucket_of = |t: Instant| -> Option<usize> {
        let i = (t.since_origin().as_secs_f64() / wf) as usize;
        (i < n_buckets).then_some(i)
    };
    let episodes: Vec<&super::file::Episode> = sc.episodes.values().collect();
    let priorities: Vec<u8> = groups.iter().map(|(_, c)| c.priority).collect();
    let mut server = Server::new(&sc.upstream, &episodes, &priorities);
    let mut up_rng = stream(master, 0, Purpose::Upstream, 0);
    let tally = Tally::default();

    // Sources: one per open group, one per closed user; instances assigned round robin.
    let mut sources: Vec<Source> = Vec::new();
    let mut open_next_instance = vec![0usize; groups.len()];
    let mut closed_users = 0usize;
    for (g, (_, c)) in groups.iter().enumerate() {
        let users = match c.kind {
            ClientKind::Open => None,
            ClientKind::Closed => Some(c.users.expect("validated")),
        };
        match users {
            None => sources.push(Source {
                group: g,
                user: None,
                instance: 0,
                arrivals: stream(master, 1, Purpose::Client, (g as u64) << 32),
                rng: stream(master, 0, Purpose::Client, (g as u64) << 32),
            }),
            Some(n) => {
                for u in 0..n {
                    sources.push(Source {
                        group: g,
                        user: Some(u),
                        instance: closed_users % stacks.len(),
                        arrivals: stream(
                            master,
                            1,
                            Purpose::Client,
                            ((g as u64) << 32) | (1 + u as u64),
                        ),
                        rng: stream(
                            master,
                            0,
                            Purpose::Client,
                            ((g as u64) << 32) | (1 + u as u64),
                        ),
                    });
                    closed_users += 1;
                }
            }
        }
    }

    let mut queue: EventQueue<Ev> = EventQueue::new();
    let think = |c: &super::file::Client, rng: &mut SeededRandom| -> Duration {
        let mean = c.think.expect("validated").secs();
        match c.think_dist.unwrap_or(ThinkDist::Exponential) {
            ThinkDist::Exponential => secs(exponential(rng, mean)),
            ThinkDist::Constant => secs(mean),
        }
    };
    let open_gap = |c: &super::file::Client, rng: &mut SeededRandom| -> Duration {
        let peak = c.rate.expect("validated") * c.profile.max_scale();
        if peak <= 0.0 {
            Duration::MAX
        } else {
            secs(exponential(rng, 1.0 / peak))
        }
    };
    for (i, s) in sources.iter_mut().enumerate() {
        let c = groups[s.group].1;
        let first = match c.kind {
            ClientKind::Open => open_gap(c, &mut s.arrivals),
            ClientKind::Closed => think(c, &mut s.arrivals),
        };
        queue.schedule(Instant::ZERO.saturating_add(first), Ev::Arrive(i));
    }
    let sample_every = width / 4;
    queue.schedule(Instant::ZERO, Ev::Sample);
    for e in &episodes {
        if e.kind == super::file::EpisodeKind::Capacity {
            queue.schedule(Instant::ZERO.saturating_add(e.from.0), Ev::Capacity);
            queue.schedule(Instant::ZERO.saturating_add(e.to.0), Ev::Capacity);
        }
    }

    let mut slots: Vec<Option<Slot<'a, S>>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut next_attempt: u64 = 0;
    let mut areas = Areas {
        since: 0.0,
        queue: 0.0,
        busy: 0.0,
        capacity: f64::from(server.servers(Duration::ZERO)),
    };
    let mut has_gauge = [false; 4];
    let mut events: u64 = 0;
    let dur_s = duration.as_secs_f64();

    while let Some((now, ev)) = queue.pop() {
        events += 1;
        if events.is_multiple_of(8192) {
            progress((now.since_origin().as_secs_f64() / dur_s).min(1.0));
        }
        let t = now.since_origin();
        let ts = t.as_secs_f64();
        let b = bucket_of(now);
        let mut send: Option<usize> = None;
        let mut ended: Option<(usize, bool, bool)> = None; // (slot, succeeded, refused)
        match ev {
            Ev::Arrive(src) => {
                if now >= end {
                    continue;
                }
                let c = groups[sources[src].group].1;
                let start = match c.kind {
                    ClientKind::Open => {
                        let gap = open_gap(c, &mut sources[src].arrivals);
                        queue.schedule(now.saturating_add(gap), Ev::Arrive(src));
                        let keep = c.profile.scale(ts) / c.profile.max_scale();
                        keep >= 1.0
                            || resilix::random::Random::unit(&mut sources[src].arrivals) < keep
                    }
                    ClientKind::Closed => {
                        let active =
                            (f64::from(c.users.expect("validated")) * c.profile.scale(ts)).round();
                        let on = f64::from(sources[src].user.expect("closed user")) < active;
                        if !on {
                            let gap = think(c, &mut sources[src].arrivals);
                            queue
                                .schedule(now.saturating_add(gap.max(width / 10)), Ev::Arrive(src));
                        }
                        on
                    }
                };
                if !start {
                    continue;
                }
                let g = sources[src].group;
                let instance = match c.kind {
                    ClientKind::Open => {
                        let i = open_next_instance[g] % stacks.len();
                        open_next_instance[g] += 1;
                        i
                    }
                    ClientKind::Closed => sources[src].instance,
                };
                let mut opts = CallOptions::default().idempotent(c.idempotent);
                if let Some(d) = c.deadline {
                    opts = opts.timeout(d.0);
                }
                let slot = Slot {
                    source: src,
                    call: stacks[instance].begin(now, opts),
                    attempt: None,
                    attempt_id: u64::MAX,
                    started: now,
                };
                let id = match free.pop() {
                    Some(id) => {
                        slots[id] = Some(slot);
                        id
                    }
                    None => {
                        slots.push(Some(slot));
                        slots.len() - 1
                    }
                };
                if let Some(i) = b {
                    buckets[i].groups[g].calls += 1;
                }
                send = Some(id);
            }
            Ev::Send(id) => send = Some(id),
            Ev::AtServer(id, attempt) => {
                if let Some(i) = b {
                    buckets[i].arrivals += 1;
                }
                let src = slots[id].as_ref().expect("live slot").source;
                let priority = groups[sources[src].group].1.priority;
                let job = Job {
                    attempt,
                    slot: id,
                    priority,
                };
                areas.advance(ts, wf, &mut buckets);
                match server.arrive(t, job, &mut up_rng) {
                    Arrival::Answer(after, verdict) => {
                        let back = net.sample(&mut sources[src].rng);
                        queue.schedule(
                            now.saturating_add(after + back),
                            Ev::Reply(id, attempt, verdict),
                        );
                    }
                    Arrival::Started(service) => {
                        queue.schedule(now.saturating_add(service), Ev::Finish(job));
                    }
                    Arrival::Queued { evicted } => {
                        if let Some(i) = b {
                            buckets[i].queue_max =
                                buckets[i].queue_max.max(server.queue_len() as u64);
                        }
                        if let Some(e) = evicted {
                            let src = slots[e.slot].as_ref().map_or(src, |s| s.source);
                            let back = net.sample(&mut sources[src].rng);
                            queue.schedule(
                                now.saturating_add(back),
                                Ev::Reply(e.slot, e.attempt, server.overload()),
                            );
                        }
                    }
                }
                areas.queue = server.queue_len() as f64;
                areas.busy = f64::from(server.busy);
            }
            Ev::Finish(job) => {
                areas.advance(ts, wf, &mut buckets);
                let waiting = slots[job.slot]
                    .as_ref()
                    .is_some_and(|s| s.attempt_id == job.attempt && s.attempt.is_some());
                if let Some(i) = b {
                    buckets[i].served += 1;
                    if !waiting {
                        buckets[i].wasted += 1;
                    }
                }
                if waiting {
                    let verdict = if server.fails(&mut up_rng) {
                        Verdict::Transient
                    } else {
                        Verdict::Success
                    };
                    let src = slots[job.slot].as_ref().expect("live").source;
                    let back = net.sample(&mut sources[src].rng);
                    queue.schedule(
                        now.saturating_add(back),
                        Ev::Reply(job.slot, job.attempt, verdict),
                    );
                }
                for (next, service) in server.free(t, true, &mut up_rng) {
                    queue.schedule(now.saturating_add(service), Ev::Finish(next));
                }
                areas.queue = server.queue_len() as f64;
                areas.busy = f64::from(server.busy);
            }
            Ev::Capacity => {
                areas.advance(ts, wf, &mut buckets);
                for (next, service) in server.free(t, false, &mut up_rng) {
                    queue.schedule(now.saturating_add(service), Ev::Finish(next));
                }
                areas.capacity = f64::from(server.servers(t));
                areas.queue = server.queue_len() as f64;
                areas.busy = f64::from(server.busy);
            }
            Ev::Sample => {
                if now >= end {
                    continue;
                }
                if let Some(i) = b {
                    let mut sum = [0.0f64; 4];
                    let mut n = [0u32; 4];
                    for s in stacks {
                        let g = gauges(s, now);
                        for (k, v) in [
                            g.breaker_open,
                            g.limiter_limit,
                            g.throttler_rejection,
                            g.budget_balance,
                        ]
                        .into_iter()
                        .enumerate()
                        {
                            if let Some(v) = v {
                                sum[k] += v;
                                n[k] += 1;
                            }
                        }
                    }
                    for k in 0..4 {
                        if n[k] > 0 {
                            has_gauge[k] = true;
                            buckets[i].gauge_sum[k] += sum[k] / f64::from(n[k]);
                            buckets[i].gauge_n[k] += 1;
                        }
                    }
                }
                queue.schedule(now.saturating_add(sample_every), Ev::Sample);
            }
            Ev::Reply(id, attempt, _) | Ev::Deadline(id, attempt)
                if slots[id]
                    .as_ref()
                    .is_some_and(|s| s.attempt_id == attempt && s.attempt.is_some()) =>
            {
                let verdict = match ev {
                    Ev::Reply(_, _, v) => v,
                    _ => {
                        if let Some(i) = b {
                            buckets[i].timeouts += 1;
                        }
                        Verdict::Timeout
                    }
                };
                let slot = slots[id].as_mut().expect("live slot");
                let a = slot.attempt.take().expect("outstanding");
                let mut env = Env::new(now, &mut sources[slot.source].rng).with_observer(&tally);
                match S::settle(&mut slot.call, a, &verdict, &mut env) {
                    Next::Done => ended = Some((id, true, false)),
                    Next::RetryAt(at) => queue.schedule(at, Ev::Send(id)),
                    Next::GiveUp(_) => ended = Some((id, false, false)),
                }
            }
            Ev::Reply(..) | Ev::Deadline(..) => {}
        }

        if let Some(id) = send {
            let slot = slots[id].as_mut().expect("live slot");
            let src = slot.source;
            let mut env = Env::new(now, &mut sources[src].rng).with_observer(&tally);
            match S::admit(&mut slot.call, &mut env) {
                Ok(attempt) => {
                    let deadline = S::deadline(&attempt);
                    let a = next_attempt;
                    next_attempt += 1;
                    slot.attempt = Some(attempt);
                    slot.attempt_id = a;
                    if let Some(i) = b {
                        buckets[i].sent += 1;
                    }
                    let there = net.sample(&mut sources[src].rng);
                    queue.schedule(now.saturating_add(there), Ev::AtServer(id, a));
                    if let Some(d) = deadline {
                        queue.schedule(d.instant(), Ev::Deadline(id, a));
                    }
                }
                Err(stop) => ended = Some((id, false, matches!(stop, Stop::Refused(_)))),
            }
        }

        if let Some((id, ok, refused)) = ended {
            let slot = slots[id].take().expect("live slot");
            free.push(id);
            let src = slot.source;
            let g = sources[src].group;
            if let Some(i) = b {
                let gb = &mut buckets[i].groups[g];
                gb.ended += 1;
                gb.succeeded += u64::from(ok);
                gb.refused += u64::from(refused);
                gb.latencies.push((now - slot.started).as_secs_f64() as f32);
            }
            let c = groups[g].1;
            if c.kind == ClientKind::Closed && now < end {
                let gap = think(c, &mut sources[src].arrivals);
                queue.schedule(now.saturating_add(gap), Ev::Arrive(src));
            }
        }
    }
    areas.advance(dur_s, wf, &mut buckets);
    progress(1.0);
    Ok(RunOutput {
        bucket: width,
        buckets,
        groups: groups.iter().map(|(n, _)| (*n).clone()).collect(),
        has_gauge,
        events,
        end: queue.now(),
    })
}

/// Wall-clock progress on stderr: only when asked, only on a terminal, and only once a run
/// has taken longer than `after`.
pub struct Meter {
    label: String,
    started: WallClock,
    after: Duration,
    shown: bool,
    enabled: bool,
}

impl Meter {
    pub fn new(label: &str, enabled: bool) -> Meter {
        Meter {
            label: label.into(),
            started: WallClock::now(),
            after: Duration::from_secs(2),
            shown: false,
            enabled,
        }
    }

    pub fn tick(&mut self, done: f64) {
        if !self.enabled || self.started.elapsed() < self.after {
            return;
        }
        self.shown = true;
        eprint!(
            "\r{}: {:>3.0}% of the simulated time ({:.0} s wall)   ",
            self.label,
            done * 100.0,
            self.started.elapsed().as_secs_f64()
        );
    }

    pub fn finish(&mut self) {
        if self.shown {
            eprintln!();
            self.shown = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::metrics::{Metric, value};
    use crate::scenario::pipeline::{Source, build, gauges};

    fn run_text(text: &str, seed: u64) -> RunOutput {
        let sc = Scenario::parse(text, false).unwrap();
        let source = Source {
            label: "t".into(),
            budgets: sc.budgets.clone(),
            pipeline: sc.pipeline.clone(),
        };
        let stacks: Vec<_> = (0..sc.run.instances)
            .map(|_| build(&source).unwrap())
            .collect();
        run(&sc, &stacks, &gauges, seed, &mut |_| {}).unwrap()
    }

    fn all(out: &RunOutput, m: Metric) -> f64 {
        value(out, m, None, 0..out.buckets.len()).unwrap()
    }

    const UPSTREAM: &str = r#"
        [upstream]
        servers = 100
        queue = 10
        latency = { dist = "constant", value = "100ms" }
    "#;

    /// Closed users never overlap their own calls: with 20 users thinking 400 ms on
    /// average, calls of 100 ms and room for all, each user completes one call per
    /// 500 ms, 40 calls/s, and at most 20 are in flight.
    #[test]
    fn closed_users_call_one_at_a_time() {
        let out = run_text(
            &format!(
                "[run]\nduration = \"60s\"\nbucket = \"1s\"\n[clients.users]\nkind = \"closed\"\nusers = 20\nthink = \"400ms\"\n{UPSTREAM}\n[pipeline]\n"
            ),
            3,
        );
        let rate = all(&out, Metric::Offered);
        assert!((rate - 40.0).abs() < 2.0, "{rate}");
        // Little: 40/s × 100 ms = 4 busy servers on average; never more than the 20 users.
        let busy = out.buckets.iter().map(|b| b.busy_area).sum::<f64>() / 60.0;
        assert!((busy - 4.0).abs() < 0.3, "{busy}");
        assert_eq!(out.buckets.iter().map(|b| b.queue_max).max(), Some(0));
        assert_eq!(all(&out, Metric::Goodput), 1.0);
    }

    /// Open arrivals follow the profile's steps, bucket by bucket.
    #[test]
    fn open_arrivals_follow_a_stepped_profile() {
        let out = run_text(
            &format!(
                "[run]\nduration = \"30s\"\nbucket = \"10s\"\n[clients.web]\nkind = \"open\"\nrate = 100\nprofile = {{ shape = \"steps\", steps = [{{ at = \"10s\", scale = 3.0 }}, {{ at = \"20s\", scale = 0.5 }}] }}\n{UPSTREAM}\n[pipeline]\n"
            ),
            4,
        );
        let per: Vec<f64> = (0..3)
            .map(|i| value(&out, Metric::Offered, None, i..i + 1).unwrap())
            .collect();
        for (got, want) in per.iter().zip([100.0, 300.0, 50.0]) {
            assert!((got / want - 1.0).abs() < 0.08, "{per:?}");
        }
    }

    /// Under overload the upstream serves the higher priority first: its calls succeed while
    /// the other group's are refused at the full queue.
    #[test]
    fn the_upstream_serves_higher_priorities_first() {
        let out = run_text(
            r#"
            [run]
            duration = "30s"
            [clients.checkout]
            kind = "open"
            rate = 40
            priority = 5
            [clients.browse]
            kind = "open"
            rate = 40
            [upstream]
            servers = 5
            queue = 20
            latency = { dist = "constant", value = "100ms" }
            [pipeline]
            "#,
            5,
        );
        let goodput = |g| value(&out, Metric::Goodput, Some(g), 0..out.buckets.len()).unwrap();
        // Capacity 50/s for 80/s offered; clients are ordered by name: browse 0, checkout 1.
        assert!(goodput(1) > 0.99, "checkout {}", goodput(1));
        assert!(goodput(0) < 0.4, "browse {}", goodput(0));
    }

    /// An attempt timeout below the service time: every attempt times out, the caller
    /// gives up, and every request the server finishes is work nobody waits for.
    #[test]
    fn timed_out_attempts_leave_wasted_work_behind() {
        let out = run_text(
            &format!(
                "[run]\nduration = \"20s\"\n[clients.web]\nkind = \"open\"\nrate = 50\n{UPSTREAM}\n[pipeline]\nattempt_timeout = \"50ms\"\n[pipeline.retry]\nmax_attempts = 2\n"
            ),
            6,
        );
        assert_eq!(all(&out, Metric::Goodput), 0.0);
        // (Attempts sent in the last 50 ms time out after the series end.)
        assert!(all(&out, Metric::TimeoutFraction) > 0.99);
        assert!(all(&out, Metric::Wasted) == 1.0);
        let amp = all(&out, Metric::LoadAmplification);
        assert!((amp - 2.0).abs() < 0.05, "{amp}");
    }

    /// A bucket width that is not a round number of seconds (the default: the duration /
    /// 120) and events on its boundaries: the time integrals still advance (they once
    /// looped forever on a boundary that `t / width` rounded below).
    #[test]
    fn integrals_cross_bucket_boundaries_of_any_width() {
        let mut buckets = vec![Bucket::default(); 3];
        let width = 20.0 / 120.0;
        let mut a = Areas {
            since: 0.0,
            queue: 1.0,
            busy: 2.0,
            capacity: 4.0,
        };
        for k in 1..=3 {
            a.advance(k as f64 * width, width, &mut buckets);
        }
        for b in &buckets {
            assert!(
                (b.queue_area - width).abs() < 1e-12
                    && (b.capacity_area - 4.0 * width).abs() < 1e-12
            );
        }
    }

    /// A run is a function of its seed alone.
    #[test]
    fn the_same_seed_gives_the_same_buckets() {
        let text = "[run]\nduration = \"20s\"\n[clients.web]\nkind = \"open\"\nrate = 200\n[upstream]\nservers = 3\nqueue = 5\nlatency = { dist = \"exponential\", mean = \"10ms\" }\n[pipeline.retry]\nmax_attempts = 3\n[pipeline.breaker]\n";
        assert_eq!(run_text(text, 9).buckets, run_text(text, 9).buckets);
        assert_ne!(run_text(text, 9).buckets, run_text(text, 10).buckets);
    }
}
