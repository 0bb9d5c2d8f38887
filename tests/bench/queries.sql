-- Benchmark workload (tests/bench-launch.sh): an in-memory shop database filled with
-- generated rows, then indexed joins, aggregates, a window function and an update, as a
-- reporting job would run.  Prints a few result rows.
create table customers (id integer primary key, name text, region integer);
create table orders (id integer primary key, customer integer, day integer, amount real,
  status text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)
insert into customers select x, 'customer' || x, x % 17 from c;
with recursive o(x) as (select 1 union all select x + 1 from o where x < 300000)
insert into orders select x, (x * 7919) % 20000 + 1, x % 365, ((x * 104729) % 10000) / 100.0,
  case when x % 11 = 0 then 'refunded' else 'paid' end from o;
create index orders_customer on orders(customer);
create index orders_day on orders(day, amount);
select region, count(*), round(sum(amount), 2) from orders join customers on customers.id = orders.customer
  where status = 'paid' group by region order by 3 desc limit 3;
select name, total from (select customer, sum(amount) as total,
  rank() over (order by sum(amount) desc) as r from orders group by customer)
  join customers on customers.id = customer where r <= 3 order by total desc;
select day, count(*) from orders where day between 100 and 110 and amount > 50 group by day
  order by day limit 3;
update orders set status = 'late' where day > 300 and amount < 10;
select status, count(*) from orders group by status order by status;
select count(distinct customer) from orders where customer in
  (select id from customers where name like 'customer1%');
