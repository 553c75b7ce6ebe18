<?php
// The plain data PHP's two assert-mode processes exchange (issue 49; php_tests.php and php_candidate.php load it):
// one JSON line a message; null, booleans, integers, finite floats and UTF-8 strings as themselves, the rest
// tagged: {"n": "nan" | "inf" | "-inf"}, {"b": base64} (a string not in valid UTF-8), {"h": [[key, value], ...]}
// (an array, keys and order kept). Anything else (an object, a closure, a resource) is refused: it never crosses.

const RLVR_MAX_DEPTH = 200;

function rlvr_encode($v, int $depth = 0) {
    if ($depth > RLVR_MAX_DEPTH) throw new TypeError("containers nested too deep");
    if ($v === null || is_bool($v) || is_int($v)) return $v;
    if (is_float($v)) return is_finite($v) ? $v : ["n" => is_nan($v) ? "nan" : ($v > 0 ? "inf" : "-inf")];
    if (is_string($v)) return preg_match('//u', $v) ? $v : ["b" => base64_encode($v)];
    if (is_array($v)) {
        $out = [];
        foreach ($v as $k => $x) $out[] = [$k, rlvr_encode($x, $depth + 1)];
        return ["h" => $out];
    }
    throw new TypeError("a " . get_debug_type($v) . " is not plain data");
}

function rlvr_decode($v, int $depth = 0) {
    if ($depth > RLVR_MAX_DEPTH) throw new TypeError("containers nested too deep");
    if ($v === null || is_bool($v) || is_int($v) || is_float($v) || is_string($v)) return $v;
    if (!is_array($v) || count($v) !== 1) throw new TypeError("not an encoded value");
    if (array_key_exists("n", $v)) {
        $n = ["nan" => NAN, "inf" => INF, "-inf" => -INF];
        if (!is_string($v["n"]) || !array_key_exists($v["n"], $n)) throw new TypeError("not an encoded value");
        return $n[$v["n"]];
    }
    if (array_key_exists("b", $v) && is_string($v["b"])) {
        $s = base64_decode($v["b"], true);
        if ($s === false) throw new TypeError("not an encoded value");
        return $s;
    }
    if (array_key_exists("h", $v) && is_array($v["h"])) {
        $out = [];
        foreach ($v["h"] as $pair) {
            if (!is_array($pair) || count($pair) !== 2 || !(is_int($pair[0]) || is_string($pair[0]))) {
                throw new TypeError("not an encoded value");
            }
            $out[$pair[0]] = rlvr_decode($pair[1], $depth + 1);
        }
        return $out;
    }
    throw new TypeError("not an encoded value");
}

function rlvr_line($msg): string {
    $s = json_encode($msg, JSON_PRESERVE_ZERO_FRACTION | JSON_UNESCAPED_SLASHES);
    if ($s === false) throw new TypeError("cannot encode: " . json_last_error_msg());
    return $s . "\n";
}

function rlvr_read($stream) {
    $line = fgets($stream);
    if ($line === false) return null;
    return json_decode($line, true, 1024);
}
