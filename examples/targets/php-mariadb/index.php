<?php
// The PHP page of examples/php-mariadb.toml (seed 001's "one MySQL access per request"): a new
// connection to the scenario's MariaDB (port from the FPM pool's env[DB_PORT]) and one query.
$db = new mysqli('127.0.0.1', 'bench', 'bench', 'bench', (int) getenv('DB_PORT'));
$row = $db->query('SELECT id, name FROM items WHERE id = 1')->fetch_assoc();
$db->close();
header('Content-Type: application/json');
echo json_encode($row), "\n";
