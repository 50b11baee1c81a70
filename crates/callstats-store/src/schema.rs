//! The portal tables as diesel sees them: one definition for both backends. Only types both
//! backends support appear here (text, integers, doubles, booleans, dates and timestamps
//! without zone), which is what lets every query be written once.

diesel::table! {
    /// The roster. `username` and `phone` are written by seeding and selected by no read.
    operators (agent_number) {
        agent_number -> Text,
        name -> Text,
        team -> Text,
        shift -> Text,
        staff_role -> Nullable<Text>,
        joined_at -> Timestamp,
        username -> Nullable<Text>,
        phone -> Nullable<Text>,
    }
}

diesel::table! {
    off_days (day, agent_number) {
        agent_number -> Text,
        day -> Date,
        kind -> Text,
        source -> Text,
    }
}

diesel::table! {
    kpi_sheets (id) {
        id -> BigInt,
        name -> Text,
        month -> Text,
        shift -> Text,
        published -> Bool,
        updated_at -> Timestamp,
        stated_kpi_sum -> Nullable<Double>,
        stated_fiksa -> Nullable<Double>,
        stated_bonus -> Nullable<Double>,
        stated_fine -> Nullable<Double>,
        stated_payout -> Nullable<Double>,
    }
}

diesel::table! {
    kpi_rows (sheet_id, sheet_row) {
        sheet_id -> BigInt,
        sheet_row -> Integer,
        agent_number -> Nullable<Text>,
        name -> Text,
        kpi_percent -> Double,
        kpi_sum -> Double,
        fiksa -> Nullable<Double>,
        bonus -> Nullable<Double>,
        fine -> Nullable<Double>,
        payout -> Nullable<Double>,
    }
}

diesel::table! {
    kpi_metrics (sheet_id, sheet_row, ordinal) {
        sheet_id -> BigInt,
        sheet_row -> Integer,
        ordinal -> Integer,
        name -> Text,
        value -> Double,
        ratio -> Nullable<Double>,
        kpi -> Double,
    }
}

diesel::table! {
    scripts (id) {
        id -> BigInt,
        title_uz -> Text,
        title_ru -> Text,
        category_uz -> Text,
        category_ru -> Text,
        views -> BigInt,
    }
}

diesel::table! {
    call_scores (call_id) {
        call_id -> Text,
        agent_number -> Text,
        started_at_unix -> BigInt,
        checklist_percent -> Double,
        sentiment -> Text,
    }
}

diesel::table! {
    api_keys (id) {
        id -> BigInt,
        name -> Text,
        key_digest -> Text,
        display_prefix -> Text,
        scopes -> Text,
        rate_limit_per_minute -> Integer,
        allowed_origin -> Nullable<Text>,
        created_at_unix -> BigInt,
        expires_at_unix -> Nullable<BigInt>,
        revoked_at_unix -> Nullable<BigInt>,
    }
}

diesel::joinable!(kpi_rows -> kpi_sheets (sheet_id));
diesel::joinable!(kpi_metrics -> kpi_sheets (sheet_id));

diesel::allow_tables_to_appear_in_same_query!(kpi_sheets, kpi_rows, kpi_metrics);

diesel::table! {
    /// The call-day store's durable tier: a settled day, encoded and compressed.
    call_days (day) {
        day -> Date,
        version -> Integer,
        fetched_at_ms -> BigInt,
        stored_at_unix -> BigInt,
        encoded -> Binary,
        rollup -> Nullable<Binary>,
    }
}
