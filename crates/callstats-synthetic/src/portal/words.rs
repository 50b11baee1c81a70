//! The demo's vocabulary: names, metrics and scripts of a Tashkent call centre.

/// First names with whether they are women's names (Uzbek surnames then take `-a`).
/// Apostrophes appear in both forms the portal holds: ASCII `'` and the modifier letter `ʻ`.
pub(super) const FIRST_NAMES: &[(&str, bool)] = &[
    ("Aziz", false),
    ("Bekzod", false),
    ("Dilnoza", true),
    ("Gʻayrat", false),
    ("G'ulom", false),
    ("Jasur", false),
    ("Kamola", true),
    ("Laylo", true),
    ("Ma'mura", true),
    ("Malika", true),
    ("Nilufar", true),
    ("Nodir", false),
    ("Oʻgʻiloy", true),
    ("Ra'no", true),
    ("Rustam", false),
    ("Sa'dulla", false),
    ("Sardor", false),
    ("Shahnoza", true),
    ("Shoira", true),
    ("Timur", false),
    ("Umid", false),
    ("Xurshida", true),
    ("Yulduz", true),
    ("Zafar", false),
    ("Elena", true),
    ("Dmitriy", false),
    ("Olga", true),
    ("Sergey", false),
];

/// Surnames; the `bool` says whether a woman's form adds `-a` (`Karimov` → `Karimova`).
pub(super) const SURNAMES: &[(&str, bool)] = &[
    ("Karimov", true),
    ("Rahimov", true),
    ("Toshmatov", true),
    ("Yoʻldoshev", true),
    ("Qodirov", true),
    ("Ismoilov", true),
    ("Gʻaniyev", true),
    ("Xolmatov", true),
    ("Abdullayev", true),
    ("Nazarov", true),
    ("Saidov", true),
    ("Oʻrinboyev", true),
    ("Kim", false),
    ("Pak", false),
    ("Li", false),
    ("Ivanov", true),
];

/// Uzbek month names, January first.
pub(super) const MONTHS_UZ: [&str; 12] = [
    "Yanvar", "Fevral", "Mart", "Aprel", "May", "Iyun", "Iyul", "Avgust", "Sentyabr", "Oktyabr",
    "Noyabr", "Dekabr",
];

/// A KPI metric: name, target, whether lower is better, lowest and highest raw value, and the
/// money it pays at target.
pub(super) struct MetricSpec {
    pub(super) name: &'static str,
    pub(super) target: f64,
    pub(super) lower_is_better: bool,
    pub(super) low: f64,
    pub(super) high: f64,
    pub(super) pay: f64,
}

pub(super) const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: "AHT",
        target: 180.0,
        lower_is_better: true,
        low: 130.0,
        high: 260.0,
        pay: 400_000.0,
    },
    MetricSpec {
        name: "FCR",
        target: 0.8,
        lower_is_better: false,
        low: 0.6,
        high: 0.95,
        pay: 350_000.0,
    },
    MetricSpec {
        name: "CSAT",
        target: 4.5,
        lower_is_better: false,
        low: 3.6,
        high: 5.0,
        pay: 300_000.0,
    },
    MetricSpec {
        name: "Sifat",
        target: 90.0,
        lower_is_better: false,
        low: 70.0,
        high: 100.0,
        pay: 450_000.0,
    },
    MetricSpec {
        name: "Davomat",
        target: 0.97,
        lower_is_better: false,
        low: 0.82,
        high: 1.0,
        pay: 250_000.0,
    },
    MetricSpec {
        name: "Qoʻngʻiroqlar",
        target: 1500.0,
        lower_is_better: false,
        low: 900.0,
        high: 2100.0,
        pay: 300_000.0,
    },
    MetricSpec {
        name: "Sotuv",
        target: 20.0,
        lower_is_better: false,
        low: 4.0,
        high: 34.0,
        pay: 200_000.0,
    },
    MetricSpec {
        name: "Xatolar",
        target: 3.0,
        lower_is_better: true,
        low: 0.0,
        high: 9.0,
        pay: 150_000.0,
    },
];

/// Script categories in Uzbek and Russian.
pub(super) const CATEGORIES: &[(&str, &str)] = &[
    ("Kirish", "Вступление"),
    ("Sotuv", "Продажи"),
    ("Shikoyatlar", "Жалобы"),
    ("Texnik yordam", "Техподдержка"),
    ("Toʻlovlar", "Платежи"),
    ("Yakunlash", "Завершение"),
];

/// Script titles in Uzbek and Russian, with the index of their category.
pub(super) const SCRIPTS: &[(&str, &str, usize)] = &[
    ("Salomlashish", "Приветствие", 0),
    ("Mijozni tanishtirish", "Идентификация клиента", 0),
    ("Qoʻngʻiroq maqsadini aniqlash", "Выяснение цели звонка", 0),
    ("Kutishga qoʻyish", "Постановка на удержание", 0),
    ("Qayta qoʻngʻiroq", "Повторный звонок", 0),
    (
        "Yangi tarifni taklif qilish",
        "Предложение нового тарифа",
        1,
    ),
    ("Qoʻshimcha xizmatlar", "Дополнительные услуги", 1),
    ("E'tirozlar bilan ishlash", "Работа с возражениями", 1),
    ("Chegirma haqida xabar", "Сообщение о скидке", 1),
    ("Shartnomani uzaytirish", "Продление договора", 1),
    ("Oilaviy tarif", "Семейный тариф", 1),
    ("Korporativ mijozlar", "Корпоративные клиенты", 1),
    ("Shikoyatni qabul qilish", "Приём жалобы", 2),
    ("Kechirim soʻrash", "Извинение перед клиентом", 2),
    ("Kompensatsiya taklifi", "Предложение компенсации", 2),
    ("Shikoyatni yuqoriga uzatish", "Эскалация жалобы", 2),
    ("Gʻazablangan mijoz", "Раздражённый клиент", 2),
    ("Sifat boʻyicha shikoyat", "Жалоба на качество", 2),
    ("Javob muddatini aytish", "Сроки ответа", 2),
    ("Internet ishlamayapti", "Не работает интернет", 3),
    ("Routerni qayta yoqish", "Перезагрузка роутера", 3),
    ("Tezlik pasaygan", "Снижение скорости", 3),
    ("Parolni tiklash", "Восстановление пароля", 3),
    (
        "Mobil ilova muammosi",
        "Проблема с мобильным приложением",
        3,
    ),
    ("Ustani chaqirish", "Вызов мастера", 3),
    ("Uskunani almashtirish", "Замена оборудования", 3),
    ("Aloqa uzilishi", "Обрыв связи", 3),
    ("Balansni tekshirish", "Проверка баланса", 4),
    ("Toʻlov tushmadi", "Платёж не поступил", 4),
    ("Karta orqali toʻlov", "Оплата картой", 4),
    (
        "Qarzdorlik haqida eslatma",
        "Напоминание о задолженности",
        4,
    ),
    ("Pulni qaytarish", "Возврат средств", 4),
    ("Hisob-fakturani yuborish", "Отправка счёта", 4),
    ("Avtotoʻlovni ulash", "Подключение автоплатежа", 4),
    ("Qoʻngʻiroqni yakunlash", "Завершение звонка", 5),
    ("Soʻrovnoma taklifi", "Предложение опроса", 5),
    ("Boshqa savollar bormi", "Остались ли вопросы", 5),
    ("Xayrlashish", "Прощание", 5),
    ("Operatorni baholash", "Оценка оператора", 5),
    (
        "Qoʻngʻiroqni boshqa boʻlimga oʻtkazish",
        "Перевод звонка в другой отдел",
        5,
    ),
];
