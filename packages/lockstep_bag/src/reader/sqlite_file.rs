//! The sqlite3 storage of the reader: rosbag2's `.db3` files (every schema version: with or without
//! QoS, type hash and message definitions), opened without ever writing beside them.

use super::types::ChannelInfo;
use crate::msgdefs::MessageDefinition;
use crate::{Error, Result};
use rusqlite::{Connection, OpenFlags};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Rows fetched per query while iterating.
pub(super) const SQLITE_PAGE: i64 = 4096;

/// An sqlite3 storage file opened for reading.
pub(super) struct SqliteFile {
    pub(super) path: PathBuf,
    conn: Connection,
    pub(super) topics: BTreeMap<i64, ChannelInfo>,
    pub(super) counts: BTreeMap<i64, u64>,
    pub(super) time_range: Option<(u64, u64)>,
}

/// One message row: (id, topic id, timestamp, data).
pub(super) type Row = (i64, i64, i64, Vec<u8>);

fn sql_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |source| Error::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// `<file><suffix>`, e.g. `talker.db3-wal`.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// A `file:` URI naming `path` (absolute, percent-encoded) with the given query.
fn sqlite_uri(path: &Path, query: &str) -> Result<String> {
    let abs = std::path::absolute(path).map_err(|e| Error::io(path, e))?;
    let mut uri = String::from("file://");
    for &b in abs.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    Ok(uri)
}

/// Opens a `.db3` file read-only without writing anything beside it.
///
/// rosbag2 leaves its databases in WAL mode, and even a read-only sqlite connection to a WAL
/// database creates `-shm` and `-wal` files (and fails in a read-only directory). When no `-wal`
/// or `-journal` file exists, everything is in the main file, so it is opened `immutable=1`: no
/// locks, no side files. A `-wal` file (a writer still running, or killed before its checkpoint)
/// holds messages the main file lacks, so then the file is opened read-only without `immutable`,
/// and sqlite may create the `-shm` index it needs to read that WAL: the one case where reading a
/// bag can add a file beside it.
fn open_read_only(path: &Path) -> Result<Connection> {
    let settled = !sidecar(path, "-wal").exists() && !sidecar(path, "-journal").exists();
    let query = if settled { "immutable=1" } else { "mode=ro" };
    let flags =
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    Connection::open_with_flags(sqlite_uri(path, query)?, flags).map_err(sql_err(path))
}

/// Every row of `sql` (run with `params`) as a tuple.
fn query_all<T, P>(conn: &Connection, path: &Path, sql: &str, params: P) -> Result<Vec<T>>
where
    T: for<'r> TryFrom<&'r rusqlite::Row<'r>, Error = rusqlite::Error>,
    P: rusqlite::Params,
{
    let mut stmt = conn.prepare_cached(sql).map_err(sql_err(path))?;
    let rows = stmt
        .query_map(params, |row| T::try_from(row))
        .map_err(sql_err(path))?;
    rows.collect::<std::result::Result<_, _>>().map_err(sql_err(path))
}

impl SqliteFile {
    pub(super) fn open(path: &Path) -> Result<Self> {
        let conn = open_read_only(path)?;
        let topics = read_topics(&conn, path)?;
        let counts = query_all::<(i64, i64), _>(
            &conn,
            path,
            "SELECT topic_id, count(*) FROM messages GROUP BY topic_id",
            [],
        )?
        .into_iter()
        .map(|(id, n)| (id, n.max(0) as u64))
        .collect();
        let range = query_all::<(Option<i64>, Option<i64>), _>(
            &conn,
            path,
            "SELECT min(timestamp), max(timestamp) FROM messages",
            [],
        )?;
        let time_range = match range.first() {
            Some(&(Some(a), Some(b))) => Some((a.max(0) as u64, b.max(0) as u64)),
            _ => None,
        };
        Ok(SqliteFile {
            path: path.to_path_buf(),
            conn,
            topics,
            counts,
            time_range,
        })
    }

    /// Up to [`SQLITE_PAGE`] messages in (timestamp, id) order: those of the `wanted` topic ids
    /// (`None`: all) with `start <= timestamp < end`, after the row `after` (timestamp, id).
    pub(super) fn read_page(
        &self,
        wanted: Option<&BTreeSet<u32>>,
        bounds: (i64, i64),
        after: Option<(i64, i64)>,
    ) -> Result<Vec<Row>> {
        let (sql, params) = page_query("id, topic_id, timestamp, data", wanted, bounds, after);
        query_all(&self.conn, &self.path, &sql, params)
    }

    /// The same page as [`read_page`](Self::read_page) without the data: (id, topic id, timestamp).
    pub(super) fn read_page_keys(
        &self,
        wanted: Option<&BTreeSet<u32>>,
        bounds: (i64, i64),
        after: Option<(i64, i64)>,
    ) -> Result<Vec<(i64, i64, i64)>> {
        let (sql, params) = page_query("id, topic_id, timestamp", wanted, bounds, after);
        query_all(&self.conn, &self.path, &sql, params)
    }

    /// The row with id `id`: (topic id, timestamp, data), `None` when there is none.
    pub(super) fn read_row(&self, id: i64) -> Result<Option<(i64, i64, Vec<u8>)>> {
        let rows = query_all(
            &self.conn,
            &self.path,
            "SELECT topic_id, timestamp, data FROM messages WHERE id = ?1",
            [id],
        )?;
        Ok(rows.into_iter().next())
    }
}

/// The query of one page of messages (see [`SqliteFile::read_page`]) selecting `columns`.
fn page_query(
    columns: &str,
    wanted: Option<&BTreeSet<u32>>,
    (start, end): (i64, i64),
    after: Option<(i64, i64)>,
) -> (String, [i64; 4]) {
    let mut sql = format!("SELECT {columns} FROM messages WHERE 1=1");
    if let Some(w) = wanted {
        let ids: Vec<String> = w.iter().map(|i| i.to_string()).collect();
        sql.push_str(&format!(" AND topic_id IN ({})", ids.join(",")));
    }
    let (after_ts, after_id) = after.unwrap_or((i64::MIN, i64::MIN));
    sql.push_str(
        " AND timestamp >= ?1 AND timestamp < ?2 AND (timestamp > ?3 OR (timestamp = ?3 AND id > ?4))",
    );
    sql.push_str(&format!(" ORDER BY timestamp, id LIMIT {SQLITE_PAGE}"));
    (sql, [start, end, after_ts, after_id])
}

/// The `topics` table (whatever columns this schema version has), with the definitions of the
/// `message_definitions` table where it exists.
fn read_topics(conn: &Connection, path: &Path) -> Result<BTreeMap<i64, ChannelInfo>> {
    let columns: BTreeSet<String> =
        query_all::<(String,), _>(conn, path, "SELECT name FROM pragma_table_info('topics')", [])?
            .into_iter()
            .map(|c| c.0)
            .collect();
    if columns.is_empty() {
        return Err(Error::NotABag {
            path: path.to_path_buf(),
            reason: "sqlite3 file has no `topics` table".into(),
        });
    }
    let col = |name: &str, fallback: &str| {
        if columns.contains(name) {
            name.to_string()
        } else {
            fallback.to_string()
        }
    };
    let sql = format!(
        "SELECT id, name, type, {}, {}, {} FROM topics ORDER BY id",
        col("serialization_format", "'cdr'"),
        col("offered_qos_profiles", "''"),
        col("type_description_hash", "''"),
    );
    let definitions = read_definitions(conn, path)?;
    let rows = query_all::<(i64, String, String, String, String, String), _>(conn, path, &sql, [])?;
    Ok(rows
        .into_iter()
        .map(|(id, name, type_name, encoding, qos_text, type_hash)| {
            let definition = definitions.get(&type_name).cloned();
            let info = ChannelInfo {
                topic: Arc::from(name.as_str()),
                type_name,
                encoding,
                qos_text,
                type_hash,
                definition,
            };
            (id, info)
        })
        .collect())
}

/// Type name -> definition from the `message_definitions` table (Jazzy and later), if present;
/// the first definition of a type wins.
fn read_definitions(conn: &Connection, path: &Path) -> Result<HashMap<String, MessageDefinition>> {
    let tables = query_all::<(i64,), _>(
        conn,
        path,
        "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='message_definitions'",
        [],
    )?;
    if tables.first().is_none_or(|n| n.0 == 0) {
        return Ok(HashMap::new());
    }
    let rows = query_all::<(String, String, String), _>(
        conn,
        path,
        "SELECT topic_type, encoding, encoded_message_definition FROM message_definitions ORDER BY id",
        [],
    )?;
    let mut definitions = HashMap::new();
    for (type_name, encoding, text) in rows {
        definitions
            .entry(type_name)
            .or_insert(MessageDefinition { encoding, text });
    }
    Ok(definitions)
}
