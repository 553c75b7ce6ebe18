<?php
// The candidate's process of PHP assert mode (issue 49; php_tests.php starts it): opens the two FIFOs, includes
// the candidate's code (solution.php), says which of the functions the tests call it defines, then answers calls
// until the pipe closes: a name and plain arguments in, one plain value or the error's class and message out
// (php_wire.php). Nothing here is trusted: the tests' process believes only what it decodes.
require __DIR__ . "/rlvr_wire.php";

$rlvr_req = fopen("rlvr_req", "r");
$rlvr_rep = fopen("rlvr_rep", "w");
$rlvr_send = function ($msg) use ($rlvr_rep) { fwrite($rlvr_rep, rlvr_line($msg)); fflush($rlvr_rep); };
$rlvr_hello = rlvr_read($rlvr_req);
if (!is_array($rlvr_hello)) exit(0);
try {
    include __DIR__ . "/solution.php"; // at top level: the candidate's globals are globals
} catch (Throwable $e) {
    fwrite(STDERR, (string)$e . "\n");
    $rlvr_send(["raise" => [get_class($e), $e->getMessage()]]);
    exit(1);
}
$rlvr_found = [];
foreach ((array)($rlvr_hello["names"] ?? []) as $n) {
    if (is_string($n) && preg_match('/^[A-Za-z_]\w*$/', $n) && function_exists($n)) $rlvr_found[$n] = "call";
}
$rlvr_send(["names" => (object)$rlvr_found]);
for (;;) {
    $msg = rlvr_read($rlvr_req);
    if (!is_array($msg)) exit(0);
    try {
        $value = rlvr_encode(call_user_func_array((string)$msg["call"], array_values((array)rlvr_decode($msg["args"]))));
        $line = rlvr_line(["value" => $value]);
    } catch (Throwable $e) {
        $rlvr_send(["raise" => [get_class($e), $e->getMessage()]]);
        continue;
    }
    fwrite($rlvr_rep, $line);
    fflush($rlvr_rep);
}
