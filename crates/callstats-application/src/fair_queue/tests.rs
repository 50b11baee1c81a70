//! The queue on its own: the order days are let out in, its bounds, the adaptive limit and the
//! estimates.

use super::*;

fn day(n: i64) -> Day {
    Day::parse("2026-01-01").unwrap().plus_days(n).unwrap()
}

fn days(numbers: &[i64]) -> Vec<Day> {
    numbers.iter().map(|n| day(*n)).collect()
}

/// The days `numbers`, each with the turn `enqueue` gives it.
fn queued(numbers: &[i64], enqueue: impl FnOnce(&[Day]) -> Vec<Turn>) -> Vec<(Day, Turn)> {
    let wanted = days(numbers);
    let turns = enqueue(&wanted);
    wanted.into_iter().zip(turns).collect()
}

fn queue(max_concurrency: usize) -> Arc<FairQueue> {
    FairQueue::new(QueueSettings {
        max_concurrency,
        max_queued_days: 100,
        max_queued_days_per_key: 10,
    })
}

/// The day of a turn already let out.
async fn let_out(turn: Turn) -> Slot {
    tokio::time::timeout(Duration::from_secs(1), turn.slot())
        .await
        .expect("let out")
        .expect("queue alive")
}

/// Whether the turn is still waiting (and gives it back).
async fn still_waiting(turn: Turn) -> Option<Turn> {
    let mut wait = turn.0;
    match tokio::time::timeout(Duration::from_millis(20), &mut wait).await {
        Err(_) => Some(Turn(wait)),
        Ok(_) => None,
    }
}

/// Lets every turn out one slot at a time and returns the days in the order they went.
async fn order(mut turns: Vec<(Day, Turn)>) -> Vec<Day> {
    let mut order = Vec::new();
    while !turns.is_empty() {
        let mut next = None;
        for (index, (_, turn)) in turns.iter_mut().enumerate() {
            if let Ok(slot) = turn.0.try_recv() {
                next = Some((index, slot));
                break;
            }
        }
        let Some((index, slot)) = next else {
            panic!(
                "no day let out; left: {:?}",
                turns.iter().map(|(d, _)| *d).collect::<Vec<_>>()
            );
        };
        order.push(turns.remove(index).0);
        drop(slot);
    }
    order
}

#[tokio::test]
async fn jobs_are_served_one_at_a_time_taking_the_keys_in_turn() {
    let queue = queue(1);
    // Key 1's first request takes the one slot at once; while it is held, key 1 sends a
    // second request, key 2 one and key 3 one.
    let mut first = queue.enqueue(1, &days(&[1, 2, 3]));
    let holding = let_out(first.remove(0)).await;
    let mut waiting: Vec<(Day, Turn)> = days(&[2, 3]).into_iter().zip(first).collect();
    for (key, numbers) in [(1, &[4][..]), (2, &[5, 6]), (3, &[7])] {
        waiting.extend(queued(numbers, |days| queue.enqueue(key, days)));
    }
    drop(holding);
    assert_eq!(
        order(waiting).await,
        // The rest of the job being served, then one job per key in turn, key 1's second last.
        days(&[2, 3, 5, 6, 7, 4])
    );
}

#[tokio::test]
async fn a_day_put_at_the_front_goes_before_any_job() {
    let queue = queue(1);
    let holding = let_out(queue.enqueue(1, &days(&[1])).remove(0)).await;
    let mut waiting = queued(&[2, 3], |days| queue.enqueue(2, days));
    waiting.push((day(9), queue.first(day(9))));
    drop(holding);
    assert_eq!(order(waiting).await, days(&[9, 2, 3]));
}

#[tokio::test]
async fn at_most_the_limit_is_let_out_at_once_and_a_turn_nobody_waits_for_is_skipped() {
    let queue = queue(2);
    let mut turns = queue.enqueue(1, &days(&[1, 2, 3, 4]));
    let fourth = turns.pop().unwrap();
    let third = turns.pop().unwrap();
    let (a, b) = (
        let_out(turns.remove(0)).await,
        let_out(turns.remove(0)).await,
    );
    let third = still_waiting(third).await.expect("two at once at most");
    drop(third);
    drop(a);
    // The third day's turn was given up: the fourth goes in its place.
    let _d = let_out(fourth).await;
    drop(b);
    assert_eq!(queue.state().in_flight.len(), 1);
}

#[tokio::test]
async fn the_queue_is_bounded_per_key_and_in_all() {
    let queue = FairQueue::new(QueueSettings {
        max_concurrency: 1,
        max_queued_days: 15,
        max_queued_days_per_key: 10,
    });
    assert!(queue.room_for(1, 10).is_ok());
    assert!(queue.room_for(1, 11).is_err());
    let _held = queue.enqueue(1, &days(&(0..10).collect::<Vec<_>>()));
    // One of them is let out at once; nine wait.
    assert!(queue.room_for(1, 1).is_ok());
    assert!(queue.room_for(1, 2).is_err(), "per key");
    assert!(queue.room_for(2, 6).is_ok());
    assert!(queue.room_for(2, 7).is_err(), "in all");
    let full = queue.room_for(2, 7).unwrap_err();
    assert!(full.drained_in >= Duration::from_secs(1), "{full:?}");
}

#[tokio::test]
async fn backpressure_halves_the_limit_once_per_burst_and_pauses_every_fetch() {
    let queue = queue(4);
    let mut turns = queue.enqueue(1, &days(&[1, 2, 3, 4, 5, 6]));
    let mut slots = Vec::new();
    for turn in turns.drain(..4) {
        slots.push(let_out(turn).await);
    }
    // The four fetches in flight are all throttled: one burst, one decrease.
    for slot in slots {
        slot.throttled(Some(Duration::from_millis(300)));
    }
    assert_eq!(queue.state().limit.current(), 2);
    // Nothing is let out during the pause, though slots are free.
    let fifth = still_waiting(turns.remove(0)).await.expect("paused");
    let started = Instant::now();
    let slot = let_out(fifth).await;
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "{:?}",
        started.elapsed()
    );
    // A throttled answer to a fetch let out after the decrease decreases again.
    slot.throttled(None);
    assert_eq!(queue.state().limit.current(), 1);
}

#[test]
fn the_limit_grows_by_one_after_a_limit_of_fetches_arrive_and_stays_within_its_bounds() {
    let mut aimd = Aimd::new(8);
    assert_eq!(aimd.current(), 8);
    assert!(aimd.on_backpressure(0));
    assert!(!aimd.on_backpressure(0), "the same burst");
    assert_eq!((aimd.current(), aimd.epoch()), (4, 1));
    for _ in 0..3 {
        aimd.on_success();
    }
    assert_eq!(aimd.current(), 4);
    aimd.on_success();
    assert_eq!(aimd.current(), 5, "four arrived at four");
    for _ in 0..100 {
        aimd.on_success();
    }
    assert_eq!(aimd.current(), 8, "never past the maximum");
    for epoch in 1..10 {
        aimd.on_backpressure(epoch);
    }
    assert_eq!(aimd.current(), 1, "never below one");
}

#[tokio::test]
async fn estimates_count_the_days_ahead_in_waves_of_the_limit() {
    let queue = queue(2);
    // Two days in flight, then a job of four: the last of them goes in the third wave.
    let mut turns = queue.enqueue(1, &days(&[1, 2, 3, 4, 5, 6]));
    let _a = let_out(turns.remove(0)).await;
    let _b = let_out(turns.remove(0)).await;
    let wanted = |numbers: &[i64]| days(numbers).into_iter().collect::<HashSet<_>>();
    assert_eq!(
        queue.estimate(&wanted(&[6])),
        Duration::ZERO,
        "no estimate before a fetch was timed"
    );
    queue.state().record_fetch_time(Duration::from_secs(1));
    assert_eq!(queue.estimate(&wanted(&[6])), Duration::from_secs(3));
    assert_eq!(queue.estimate(&wanted(&[3])), Duration::from_secs(2));
    assert!(
        queue.estimate(&wanted(&[1])) <= Duration::from_secs(1),
        "in flight"
    );
    assert_eq!(queue.estimate(&wanted(&[99])), Duration::ZERO, "not queued");
    // Another key's job waits behind this one.
    let _later = queue.enqueue(2, &days(&[7]));
    assert_eq!(queue.estimate(&wanted(&[7])), Duration::from_secs(4));
}

#[tokio::test]
async fn estimates_follow_the_measured_fetch_time() {
    let queue = queue(1);
    let mut turns = queue.enqueue(1, &days(&[1, 2, 3]));
    let slot = let_out(turns.remove(0)).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    slot.fetched();
    let _running = let_out(turns.remove(0)).await;
    let wanted: HashSet<Day> = [day(3)].into_iter().collect();
    let estimate = queue.estimate(&wanted);
    assert!(
        (Duration::from_millis(90)..Duration::from_millis(200)).contains(&estimate),
        "two waves of about 50 ms: {estimate:?}"
    );
}

#[tokio::test]
async fn the_warmers_days_go_after_every_keys_and_a_day_a_request_needs_goes_first() {
    let queue = queue(1);
    let holding = let_out(queue.enqueue(1, &days(&[1])).remove(0)).await;
    let mut waiting = queued(&[20, 21, 22], |days| queue.enqueue_background(days));
    for (key, numbers) in [(2, &[5, 6][..]), (3, &[7])] {
        waiting.extend(queued(numbers, |days| queue.enqueue(key, days)));
    }
    // A request joins the fetch of the 22nd: it no longer waits behind anyone.
    queue.promote(day(22));
    queue.promote(day(99));
    drop(holding);
    assert_eq!(order(waiting).await, days(&[22, 5, 6, 7, 20, 21]));
}

#[tokio::test]
async fn the_warmers_days_are_let_out_when_nothing_else_waits() {
    let queue = queue(2);
    let mut turns = queue.enqueue_background(&days(&[1, 2, 3]));
    let third = turns.pop().unwrap();
    let (a, b) = (
        let_out(turns.remove(0)).await,
        let_out(turns.remove(0)).await,
    );
    let third = still_waiting(third).await.expect("two at once at most");
    drop((a, b));
    let _third = let_out(third).await;
}

#[tokio::test]
async fn the_backfills_days_go_after_the_warmers_and_a_day_a_request_needs_goes_first() {
    let queue = queue(1);
    let holding = let_out(queue.enqueue(1, &days(&[1])).remove(0)).await;
    let mut waiting = queued(&[30, 31, 32], |days| queue.enqueue_backfill(days));
    waiting.extend(queued(&[20], |days| queue.enqueue_background(days)));
    waiting.extend(queued(&[5], |days| queue.enqueue(2, days)));
    queue.promote(day(32));
    drop(holding);
    assert_eq!(order(waiting).await, days(&[32, 5, 20, 30, 31]));
}
