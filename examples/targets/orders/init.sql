-- The database of examples/orders.toml, run by mariadb.sh (its INIT_SQL) at every start of
-- MariaDB: the `orders` table the load inserts into and a user that may only insert and read.
CREATE DATABASE IF NOT EXISTS orders CHARACTER SET utf8mb4;
CREATE TABLE IF NOT EXISTS orders.orders (
    id BIGINT PRIMARY KEY,
    item VARCHAR(64) NOT NULL,
    qty INT NOT NULL,
    price_cents INT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
) ENGINE = InnoDB;
CREATE USER IF NOT EXISTS 'orders'@'127.0.0.1' IDENTIFIED BY 'orders';
GRANT INSERT, SELECT ON orders.* TO 'orders'@'127.0.0.1';
