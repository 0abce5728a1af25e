//! HTTP status classification (being written).
