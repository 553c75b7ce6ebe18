# The tests' process of Perl assert mode (issue 49): runs in the toolchain sandbox, never in the service.
#
# Started as a copy of perl that its own user cannot read (chmod 100): the kernel makes the process non-dumpable,
# so the candidate's process (same uid) cannot open its /proc files or ptrace it. It reads the sentinel
# (rlvr_nonce) and the tests (rlvr_tests.pl), deletes both, loads the modules the tests use, then starts the
# candidate's process (pl_candidate.pl: the candidate's code in a perl of its own, its stdout going to stderr)
# and talks to it over two FIFOs with plain data (pl_wire.pl). Every sub the tests call that the candidate
# defines (and perl, the tests and their modules do not) is a sub here that crosses over in the caller's
# context; the tests run in this pristine perl; the sentinel and what ran go on this process's stdout, which the
# candidate cannot reach. A failed test (a die, an exit with a non-zero status) exits 1 saying "Test failed";
# the tests' own error before any call into the candidate prints ``{sentinel}:bad_reference:...``; the
# candidate's process ending early (or the tests exiting 0 before their end) exits 0 without the sentinel.

# the tests compile here: in package main, no lexical of ours in scope, no pragma of ours on
sub rlvr_run_tests { return eval "package main;\n#line 1 tests.pl\n$_[0]\n;1;" }

BEGIN { require "./rlvr_wire.pl"; }
use strict;
use warnings;
use POSIX ();

our %RAN = (tests => 1, asserts => 0, calls => 0);
our ($SENTINEL, $TESTS, @WANTED, $REQ, $REP);
sub slurp { open(my $fh, '<', $_[0]) or die "$_[0]: $!\n"; local $/; my $s = <$fh>; close $fh; return $s }
($SENTINEL = slurp('rlvr_nonce')) =~ s/\s+\z//;
$TESTS = slurp('rlvr_tests.pl');
unlink 'rlvr_nonce', 'rlvr_tests.pl';
my @modules = $TESTS =~ /^\s*(?:use|require)\s+([A-Za-z_][\w:]*)/mg;
for my $m (@modules) { eval "require $m; 1" if $m =~ /\A[A-Z][\w:]*\z/ }  # the tests' own use says if it fails

sub say_and_exit { print STDOUT "\n$SENTINEL:$_[0]\n"; STDOUT->flush; POSIX::_exit(0) }
sub ended {
    print STDERR "\nthe candidate's program ended before the tests finished\n";
    POSIX::_exit(0);    # exit 0 without the sentinel: never a pass (code.early_exit)
}
sub failed { print STDERR "$_[0]\nTest failed: $_[0]\n"; STDERR->flush; POSIX::_exit(1) }

POSIX::mkfifo($_, 0600) or die "mkfifo: $!\n" for 'rlvr_req', 'rlvr_rep';
my $pid = fork // die "fork: $!\n";
if (!$pid) {
    open(STDIN, '<', '/dev/null');
    open(STDOUT, '>&', \*STDERR);
    exec 'perl', 'rlvr_candidate.pl';
    POSIX::_exit(127);
}
$SIG{PIPE} = 'IGNORE';
open($REQ, '>', 'rlvr_req') or die "rlvr_req: $!\n";
open($REP, '<', 'rlvr_rep') or die "rlvr_rep: $!\n";

sub ask {
    print {$REQ} RlvrWire::line($_[0]) or ended();
    $REQ->flush or ended();
    my $msg = eval { RlvrWire::read_line($REP) };
    ended() unless ref $msg eq 'HASH';
    return $msg;
}

sub call {
    my ($name, $ctx, $args) = @_;
    $RAN{calls} += 1;
    my $reply = ask({ call => $name, ctx => $ctx, args => RlvrWire::encode($args) });
    if (ref $reply->{value} eq 'ARRAY') {
        $RAN{nonfinite} = 1 if RlvrWire::line($reply->{value}) =~ /"f":"[-+]?(?:inf|nan)/i;
        my @r = map { RlvrWire::decode($_) } @{ $reply->{value} };
        return $ctx eq 'list' ? @r : $r[0];
    }
    my $raise = ref $reply->{raise} eq 'ARRAY' ? $reply->{raise} : ['die', "an unreadable answer\n"];
    die "" . $raise->[1];
}

# the subs the tests call that neither perl, the tests nor their modules define: the candidate's, if it does
my %own = map { ($_ => 1) } $TESTS =~ /\bsub\s+([A-Za-z_]\w*)/g;
my %seen;
for my $n ($TESTS =~ /(?<![\w\$\@%:>-])&?([A-Za-z_]\w*)(?=\s*\(|\s*;|\s*->)|\\&([A-Za-z_]\w*)/g) {
    next if !defined $n || $seen{$n}++ || $own{$n} || defined &{"main::$n"} || eval { prototype("CORE::$n"); 1 };
    next if grep { defined &{"${_}::$n"} } @modules;
    push @WANTED, $n;
}
my $hello = ask({ names => \@WANTED });
if (ref $hello->{names} ne 'HASH') {
    print STDERR (ref $hello->{raise} eq 'ARRAY' ? $hello->{raise}[1] : "the candidate's code failed\n");
    POSIX::_exit(1);
}
for my $n (@WANTED) {
    next unless ($hello->{names}{$n} // '') eq 'call';
    no strict 'refs';
    *{"main::$n"} = sub { my $w = wantarray; call($n, $w ? 'list' : defined $w ? 'scalar' : 'void', [@_]) };
}
BEGIN {
    *CORE::GLOBAL::exit = sub (;$) {
        my $status = @_ ? 0 + $_[0] : 0;
        failed("the tests exited with status $status") if $status;
        ended();    # the tests' own exit 0 before their end: they did not run to it
    };
}

my $ok = rlvr_run_tests($TESTS);
if (!$ok) {
    my $e = $@;
    my $missing = $e =~ /^Undefined subroutine &main::(\w+) called/ && grep { $_ eq $1 } @WANTED;
    say_and_exit('bad_reference:' . RlvrWire::line("$e")) if !$missing && $RAN{calls} == 0;
    failed($e);
}
print STDOUT "\n$SENTINEL\n";
say_and_exit('ran:' . RlvrWire::line(\%RAN));
