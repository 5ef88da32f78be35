<?php
// The front controller of examples/orders.toml: an orders API on the scenario's own MariaDB
// (port from the FPM pool's env[DB_PORT]), a new connection per request like index.php.
//
//   POST /orders        {"id":N,"item":"…","qty":N,"price_cents":N} inserts one row: 201 {"id":N};
//                       the id taken already: 409 {"error":"duplicate id N"}; bad JSON or
//                       fields: 400 {"error":"…"}
//   GET  /orders/{id}   200 {"id":…,"item":…,"qty":…,"price_cents":…,"created_at":"…"}, or 404
//   GET  /orders/count  200 {"rows":N,"min":…,"max":…,"distinct":N} (min and max null when empty)
//
// Every answer is JSON; another method on these paths is a 405, another path a 404, and a
// database failure a 500 naming it.

header('Content-Type: application/json');

function answer(int $status, array $body): never
{
    http_response_code($status);
    echo json_encode($body, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE), "\n";
    exit;
}

function db(): mysqli
{
    mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
    $db = mysqli_init();
    // Numbers as numbers in query() results too (prepared statements give them anyway).
    $db->options(MYSQLI_OPT_INT_AND_FLOAT_NATIVE, true);
    $db->real_connect('127.0.0.1', 'orders', 'orders', 'orders', (int) getenv('DB_PORT'));
    $db->set_charset('utf8mb4');
    return $db;
}

/** The order in a POST body, or a 400 naming what is wrong. */
function order_of(string $body): array
{
    $order = json_decode($body, true);
    if (json_last_error() !== JSON_ERROR_NONE) {
        answer(400, ['error' => 'the body is not JSON: ' . json_last_error_msg()]);
    }
    if (!is_array($order) || array_is_list($order)) {
        answer(400, ['error' => 'the body is not a JSON object']);
    }
    $int32 = fn ($v) => is_int($v) && $v >= -2147483648 && $v <= 2147483647;
    if (!is_int($order['id'] ?? null)) {
        answer(400, ['error' => '"id" must be a whole number']);
    }
    $item = $order['item'] ?? null;
    // iconv_strlen: characters, as VARCHAR(64) counts them; false for invalid UTF-8.
    $chars = is_string($item) ? iconv_strlen($item, 'UTF-8') : false;
    if ($chars === false || $chars < 1 || $chars > 64) {
        answer(400, ['error' => '"item" must be a string of 1 to 64 characters']);
    }
    foreach (['qty', 'price_cents'] as $key) {
        if (!$int32($order[$key] ?? null)) {
            answer(400, ['error' => "\"$key\" must be a whole number that fits in 32 bits"]);
        }
    }
    return $order;
}

function insert(array $order): never
{
    $id = $order['id'];
    $db = db(); // kept in a variable: the statement needs its connection open
    $st = $db->prepare('INSERT INTO orders (id, item, qty, price_cents) VALUES (?, ?, ?, ?)');
    $st->bind_param('isii', $id, $order['item'], $order['qty'], $order['price_cents']);
    try {
        $st->execute();
    } catch (mysqli_sql_exception $e) {
        if ($e->getCode() === 1062) { // ER_DUP_ENTRY
            answer(409, ['error' => "duplicate id $id"]);
        }
        throw $e;
    }
    answer(201, ['id' => $id]);
}

function read(int $id): never
{
    $db = db();
    $st = $db->prepare('SELECT id, item, qty, price_cents, created_at FROM orders WHERE id = ?');
    $st->bind_param('i', $id);
    $st->execute();
    $row = $st->get_result()->fetch_assoc();
    $row === null ? answer(404, ['error' => "no order $id"]) : answer(200, $row);
}

function count_rows(): never
{
    $row = db()->query('SELECT COUNT(*) AS `rows`, MIN(id) AS `min`, MAX(id) AS `max`, '
        . 'COUNT(DISTINCT id) AS `distinct` FROM orders')->fetch_assoc();
    answer(200, $row);
}

$method = $_SERVER['REQUEST_METHOD'];
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
try {
    if ($path === '/orders') {
        if ($method === 'POST') {
            insert(order_of(file_get_contents('php://input')));
        }
        header('Allow: POST');
        answer(405, ['error' => 'use POST /orders']);
    }
    if ($path === '/orders/count' || preg_match('#^/orders/(-?[0-9]{1,18})$#', $path, $m)) {
        if ($method !== 'GET' && $method !== 'HEAD') {
            header('Allow: GET, HEAD');
            answer(405, ['error' => "use GET $path"]);
        }
        isset($m[1]) ? read((int) $m[1]) : count_rows();
    }
    answer(404, ['error' => "no route $path"]);
} catch (mysqli_sql_exception $e) {
    answer(500, ['error' => 'database: ' . $e->getMessage()]);
}
