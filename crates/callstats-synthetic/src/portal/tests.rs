use std::collections::{BTreeMap, BTreeSet};

use super::*;

fn agents() -> Vec<AgentNumber> {
    (101..=180)
        .map(|n: u32| AgentNumber::new(&n.to_string()).unwrap())
        .collect()
}

fn anchor() -> Day {
    Day::parse("2026-11-21").unwrap()
}

/// 200 answered calls a day, spread over the agents and the day.
fn calls(day: Day) -> Vec<ScorableCall> {
    let agents = agents();
    let midnight = PrimitiveDateTime::new(day.date(), Time::MIDNIGHT)
        .assume_offset(callstats_domain::tz::TASHKENT);
    (0..200_u32)
        .map(|n| ScorableCall {
            id: format!("c-{day}-{n}"),
            agent_number: agents[usize::try_from(n).unwrap() % agents.len()].clone(),
            started_at: midnight + Duration::seconds(i64::from(n) * 400),
        })
        .collect()
}

fn demo(seed: u64) -> Fixture {
    data_set(seed, anchor(), &agents(), calls)
}

#[test]
fn the_demo_is_the_same_for_the_same_seed_and_anchor_and_differs_across_seeds() {
    assert_eq!(demo(42), demo(42));
    assert_eq!(
        serde_json::to_string(&demo(7)).unwrap(),
        serde_json::to_string(&demo(7)).unwrap()
    );
    assert_ne!(demo(42), demo(43));
    let later = data_set(42, anchor().plus_days(40).unwrap(), &agents(), calls);
    assert_ne!(demo(42).kpi_sheets[0].month, later.kpi_sheets[0].month);
}

#[test]
fn the_demo_passes_every_fixture_check_and_survives_its_own_json() {
    let fixture = demo(42);
    let counts = fixture.validate().unwrap().counts();
    assert_eq!(counts.operators, 80);
    assert!((35..=45).contains(&counts.scripts), "{counts}");
    let json = serde_json::to_string(&fixture).unwrap();
    let again = Fixture::from_json(&json).unwrap();
    assert_eq!(serde_json::to_string(&again).unwrap(), json);
    assert!(
        again == fixture,
        "the JSON form reads back as the same fixture"
    );
}

#[test]
fn the_roster_has_teams_shifts_staff_and_both_apostrophes() {
    let operators = demo(42).operators;
    let numbers: Vec<_> = operators.iter().map(|o| o.agent_number.clone()).collect();
    assert_eq!(numbers, agents());
    assert!(operators.iter().any(|o| o.name.starts_with("O'tkir")));
    assert!(operators.iter().any(|o| o.name.starts_with("Oʻtkir")));
    let teams: BTreeSet<_> = operators.iter().map(|o| o.team.as_str()).collect();
    assert_eq!(teams.len(), 8);
    let shifts: BTreeSet<_> = operators.iter().map(|o| o.shift.as_str()).collect();
    assert_eq!(shifts, BTreeSet::from(["kunduzgi", "tungi"]));
    let roles: BTreeSet<_> = operators
        .iter()
        .filter_map(|o| o.staff_role.as_deref())
        .collect();
    assert_eq!(
        roles,
        BTreeSet::from(["quality analyst", "supervisor", "team lead"])
    );
    assert!(
        operators
            .iter()
            .all(|o| o.username.is_some() && o.phone.is_some())
    );
    assert!(
        operators
            .iter()
            .all(|o| o.joined_at.value().date() < anchor().date())
    );
}

#[test]
fn the_sheets_cover_three_months_two_shifts_a_draft_and_the_historical_oddities() {
    let sheets = demo(42).kpi_sheets;
    let published: Vec<_> = sheets.iter().filter(|s| s.published).collect();
    let months: BTreeSet<_> = published.iter().map(|s| s.month.to_string()).collect();
    assert_eq!(
        months,
        BTreeSet::from(["2026-08".into(), "2026-09".into(), "2026-10".into()])
    );
    let october: Vec<_> = published
        .iter()
        .filter(|s| s.month.to_string() == "2026-10")
        .map(|s| s.shift.as_str())
        .collect();
    assert_eq!(october, ["kunduzgi", "tungi"]);
    let drafts: Vec<_> = sheets.iter().filter(|s| !s.published).collect();
    assert_eq!(drafts.len(), 1);
    assert_eq!(drafts[0].month.to_string(), "2026-11");

    let disagreeing = published.iter().filter(|sheet| {
        let rows_sum: f64 = sheet.operators.iter().map(|r| r.kpi_sum).sum();
        sheet
            .sheet_totals
            .kpi_sum
            .is_some_and(|stated| (stated - rows_sum).abs() > 1.0)
    });
    assert_eq!(disagreeing.count(), 1);

    let without_fiksa: Vec<_> = published
        .iter()
        .filter(|s| s.operators.iter().all(|r| r.fiksa.is_none()))
        .collect();
    assert_eq!(without_fiksa.len(), 1);
    assert_eq!(without_fiksa[0].sheet_totals.fiksa, None);

    let unnamed: Vec<_> = published
        .iter()
        .flat_map(|s| &s.operators)
        .filter(|r| r.agent_number.is_none())
        .collect();
    assert_eq!(unnamed.len(), 1);

    for sheet in &sheets {
        assert!(sheet.operators.len() >= 10, "{}", sheet.name);
        for row in &sheet.operators {
            assert_eq!(row.metrics.len(), METRICS.len());
            let payout = row.payout.unwrap();
            let expected = row.kpi_sum + row.fiksa.unwrap_or(0.0) + row.bonus.unwrap_or(0.0)
                - row.fine.unwrap_or(0.0);
            assert!((payout - expected).abs() < 0.01, "{row:?}");
        }
    }
}

#[test]
fn off_days_have_every_kind_and_source_around_the_anchor() {
    let days = demo(42).off_days;
    let kinds: BTreeSet<_> = days.iter().map(|d| format!("{:?}", d.kind)).collect();
    assert_eq!(kinds.len(), 2);
    let sources: BTreeSet<_> = days.iter().map(|d| format!("{:?}", d.source)).collect();
    assert_eq!(sources.len(), 3);
    let months: BTreeSet<_> = days.iter().map(|d| d.date.month().to_string()).collect();
    assert_eq!(
        months,
        BTreeSet::from(["2026-08", "2026-09", "2026-10", "2026-11", "2026-12"].map(String::from))
    );
    let mut per_agent_month: BTreeMap<(String, String), usize> = BTreeMap::new();
    for day in &days {
        *per_agent_month
            .entry((day.agent_number.to_string(), day.date.month().to_string()))
            .or_default() += 1;
    }
    assert!(per_agent_month.values().all(|n| (4..=5).contains(n)));
}

#[test]
fn scripts_have_uzbek_and_russian_titles() {
    for script in demo(42).scripts {
        assert!(
            script
                .title
                .ru
                .chars()
                .any(|c| ('а'..='я').contains(&c.to_lowercase().next().unwrap())),
            "{script:?}"
        );
        assert!(
            script.title.uz.is_ascii()
                || script.title.uz.contains('ʻ')
                || script.title.uz.contains('\''),
            "{script:?}"
        );
    }
}

#[test]
fn call_scores_are_a_sample_of_the_given_calls_of_the_last_30_days() {
    let scores = demo(42).call_scores;
    let first = anchor().plus_days(-(SCORED_DAYS - 1)).unwrap();
    let given: BTreeMap<String, ScorableCall> = (0..SCORED_DAYS)
        .flat_map(|d| calls(first.plus_days(d).unwrap()))
        .map(|call| (call.id.clone(), call))
        .collect();
    // About 5 % of 30 × 200 calls.
    assert!((200..=400).contains(&scores.len()), "{}", scores.len());
    for score in &scores {
        let call = &given[&score.call_id];
        assert_eq!(
            (&call.agent_number, call.started_at),
            (&score.agent_number, score.started_at)
        );
        assert!((0.0..=100.0).contains(&score.checklist_percent));
    }
    let sentiments: BTreeSet<_> = scores
        .iter()
        .map(|s| format!("{:?}", s.sentiment))
        .collect();
    assert_eq!(sentiments.len(), 3);
}
