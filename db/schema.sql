-- The tables of SCR's database event log, for MariaDB or MySQL.
--
-- Column for column these are the tables of SCR v3.1's log, so a database made for v3.1
-- takes this project's records unchanged and one made here takes v3.1's. Run it in the
-- database named by SCR_LOG_DB_NAME, as `scr db init` does:
--
--     scr db init                       (creates the database and these tables)
--     mariadb scr < schema.sql          (the same by hand, into an existing database `scr`)
--
-- Every statement is idempotent: running it again over a database in use keeps its rows.

-- Names of event and transfer kinds (START, CHECKPOINT, FLUSH, ...), one id each.
CREATE TABLE IF NOT EXISTS `types` (
  `id` INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `name` VARCHAR(512) NOT NULL,
  UNIQUE INDEX `name` (`name`(512))
);

-- Login names of the users whose jobs logged, one id each.
CREATE TABLE IF NOT EXISTS `usernames` (
  `id` INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `name` VARCHAR(512) NOT NULL,
  UNIQUE INDEX `name` (`name`(512))
);

-- Job names, one id each: the job's prefix directory, which stays the same across the
-- runs and allocations that restart one computation.
CREATE TABLE IF NOT EXISTS `jobnames` (
  `id` INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `name` VARCHAR(512) NOT NULL,
  UNIQUE INDEX `name` (`name`(512))
);

-- One row per user and job name: every run of a computation shares it; `start` is when
-- its first run started.
CREATE TABLE IF NOT EXISTS `jobs` (
  `id` INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `username_id` INT UNSIGNED NOT NULL,
  `jobname_id` INT UNSIGNED NOT NULL,
  `start` DATETIME NOT NULL,
  UNIQUE INDEX `name` (`username_id`, `jobname_id`)
);

-- One row per dataset moved: written to cache (CHECKPOINT, OUTPUT), flushed to the
-- prefix (FLUSH), fetched back (FETCH); with its size, time and bandwidth in bytes/s.
CREATE TABLE IF NOT EXISTS `transfers` (
  `id` INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `job_id` INT NOT NULL,
  `type_id` INT UNSIGNED NOT NULL,
  `dset_id` INT UNSIGNED NOT NULL,
  `dset_name` VARCHAR(512) NOT NULL,
  `start` DATETIME NOT NULL,
  `end` DATETIME NOT NULL,
  `secs` FLOAT NOT NULL,
  `bytes` FLOAT NOT NULL,
  `files` INT UNSIGNED NOT NULL,
  `bw` FLOAT NOT NULL,
  `from` BLOB NOT NULL,
  `to` BLOB NOT NULL,
  INDEX `jobid_start` (`job_id`, `start`),
  INDEX `jobid_typeid_start` (`job_id`, `type_id`, `start`),
  INDEX `typeid_start` (`type_id`, `start`)
);

-- One row per event of a run: START and END (a run's bounds), HALT with its reason,
-- RESTART, failures; what an event does not concern is NULL.
CREATE TABLE IF NOT EXISTS `events` (
  `id` INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  `job_id` INT NOT NULL,
  `type_id` INT UNSIGNED NOT NULL,
  `dset_id` INT UNSIGNED NULL,
  `dset_name` VARCHAR(512) NULL,
  `start` DATETIME NULL,
  `secs` FLOAT NULL,
  `note` BLOB NULL,
  INDEX `jobid_start` (`job_id`, `start`),
  INDEX `jobid_typeid_start` (`job_id`, `type_id`, `start`),
  INDEX `typeid_start` (`type_id`, `start`)
);
