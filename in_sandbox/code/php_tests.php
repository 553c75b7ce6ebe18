<?php
// The tests' process of PHP assert mode (issue 49): runs in the toolchain sandbox, never in the service.
//
// Started as a copy of php that its own user cannot read (chmod 100): the kernel makes the process non-dumpable,
// so the candidate's process (same uid) cannot open its /proc files or ptrace it. It reads the sentinel
// (rlvr_nonce) and the tests (rlvr_tests.php), deletes both, starts the candidate's process (php_candidate.php:
// the candidate's code in a php of its own, its stdout going to stderr) and talks to it over two FIFOs with plain
// data (php_wire.php). Every function the tests call that the candidate defines (and this php and the tests do
// not) is a function here that crosses over; the tests run in this pristine process, with assert() on; the
// sentinel and what ran go on this process's stdout, which the candidate cannot reach. A failed test exits 1
// saying "Test failed"; the tests' own error before any call into the candidate prints
// ``{sentinel}:bad_reference:...``; the candidate's process ending early exits 0 without the sentinel.
require __DIR__ . "/rlvr_wire.php";

define("RLVR_SENTINEL", trim(file_get_contents("rlvr_nonce")));
$rlvr_tests = file_get_contents("rlvr_tests.php");
unlink("rlvr_nonce");
unlink("rlvr_tests.php");
$GLOBALS["rlvr_ran"] = ["tests" => 1, "asserts" => 0, "calls" => 0];

function rlvr_ended() {
    fwrite(STDERR, "\nthe candidate's program ended before the tests finished\n");
    exit(0); // exit 0 without the sentinel: never a pass (code.early_exit)
}

function rlvr_say(string $what) {
    echo "\n" . RLVR_SENTINEL . ":" . $what . "\n";
    exit(0); // exit 0: the driver keeps the stdout of a run that ended well
}

if (!posix_mkfifo("rlvr_req", 0600) || !posix_mkfifo("rlvr_rep", 0600)) exit(1);
$rlvr_child = proc_open(["php", "rlvr_candidate.php"], [0 => ["file", "/dev/null", "r"], 1 => STDERR, 2 => STDERR], $rlvr_pipes);
$GLOBALS["rlvr_req"] = fopen("rlvr_req", "w");
$GLOBALS["rlvr_rep"] = fopen("rlvr_rep", "r");

function rlvr_ask($msg) {
    if (@fwrite($GLOBALS["rlvr_req"], rlvr_line($msg)) === false || !@fflush($GLOBALS["rlvr_req"])) rlvr_ended();
    $line = fgets($GLOBALS["rlvr_rep"]);
    if ($line === false) rlvr_ended();
    return json_decode($line, true, 1024);
}

const RLVR_ERRORS = ["Exception", "Error", "TypeError", "ValueError", "ArgumentCountError", "ArithmeticError",
    "DivisionByZeroError", "InvalidArgumentException", "RuntimeException", "LogicException", "OutOfRangeException",
    "LengthException", "DomainException", "RangeException", "UnexpectedValueException", "OutOfBoundsException",
    "OverflowException", "UnderflowException", "JsonException"];

function rlvr_call(string $name, array $args) {
    $GLOBALS["rlvr_ran"]["calls"] += 1;
    $reply = rlvr_ask(["call" => $name, "args" => rlvr_encode(array_values($args))]);
    if (is_array($reply) && array_key_exists("value", $reply)) {
        if (strpos(json_encode($reply["value"]), '{"n":') !== false) $GLOBALS["rlvr_ran"]["nonfinite"] = 1;
        return rlvr_decode($reply["value"]);
    }
    [$cls, $message] = is_array($reply) && is_array($reply["raise"] ?? null) && count($reply["raise"]) === 2
        ? $reply["raise"] : ["Exception", "an unreadable answer"];
    $cls = in_array($cls, RLVR_ERRORS, true) ? $cls : "Exception";
    throw new $cls((string)$message);
}

// the functions the tests call that neither php nor the tests define: the candidate's, if it defines them
preg_match_all('/(?<![\w$>:\\\\])([A-Za-z_]\w*)\s*\(/', $rlvr_tests, $m);
preg_match_all('/\bfunction\s+&?\s*([A-Za-z_]\w*)/i', $rlvr_tests, $own);
$rlvr_own = array_map("strtolower", $own[1]);
$rlvr_keywords = ["if", "elseif", "while", "for", "foreach", "switch", "match", "function", "fn", "array", "list",
    "isset", "unset", "empty", "echo", "print", "return", "new", "catch", "declare", "exit", "die", "eval",
    "include", "require", "include_once", "require_once", "use", "and", "or", "not"];
$rlvr_wanted = [];
foreach (array_unique($m[1]) as $n) {
    $l = strtolower($n);
    if (!in_array($l, $rlvr_keywords, true) && !in_array($l, $rlvr_own, true) && !function_exists($n)) $rlvr_wanted[] = $n;
}
$rlvr_hello = rlvr_ask(["names" => $rlvr_wanted]);
if (!is_array($rlvr_hello) || !is_array($rlvr_hello["names"] ?? null)) {
    fwrite(STDERR, is_array($rlvr_hello["raise"] ?? null) ? implode(": ", $rlvr_hello["raise"]) : "the candidate's code failed");
    fwrite(STDERR, "\n");
    exit(1);
}
foreach ($rlvr_hello["names"] as $n => $kind) {
    if (in_array($n, $rlvr_wanted, true) && $kind === "call" && !function_exists($n)) {
        eval("function $n(...\$a) { return rlvr_call('$n', \$a); }"); // $n: a checked identifier
    }
}

function rlvr_missing(Throwable $e): bool {
    return $e instanceof Error && preg_match('/^Call to undefined function (\w+)\(\)/', $e->getMessage(), $g)
        && in_array($g[1], $GLOBALS["rlvr_wanted"], true);
}

try {
    eval("?>" . $rlvr_tests); // at top level, as the tests would run alone
} catch (Throwable $e) {
    if (!($e instanceof AssertionError) && !rlvr_missing($e) && $GLOBALS["rlvr_ran"]["calls"] === 0) {
        rlvr_say("bad_reference:" . json_encode((string)$e));
    }
    fwrite(STDERR, (string)$e . "\nTest failed: " . $e->getMessage() . "\n");
    exit(1);
}
echo "\n" . RLVR_SENTINEL . "\n";
rlvr_say("ran:" . json_encode($GLOBALS["rlvr_ran"]));
