# The candidate's process of Perl assert mode (issue 49; pl_tests.pl starts it): opens the two FIFOs, runs the
# candidate's code (solution.pl) in this perl, says which of the names the tests read it defines as subs, then
# answers calls until the pipe closes: a name, the caller's context and plain arguments in, the plain values out
# (or the error's text) (pl_wire.pl). Nothing here is trusted: the tests' process believes only what it decodes.
BEGIN { require "./rlvr_wire.pl"; }
open(my $rlvr_req, '<', 'rlvr_req') or exit 1;
open(my $rlvr_rep, '>', 'rlvr_rep') or exit 1;
$rlvr_rep->autoflush(1);
my $rlvr_hello = RlvrWire::read_line($rlvr_req) or exit 0;
{
    package main;
    local $@;
    my $ok = do './solution.pl';
    if (!defined $ok && $@) {
        print STDERR $@;
        print {$rlvr_rep} RlvrWire::line({ raise => ['die', "$@"] });
        exit 1;
    }
}
my %rlvr_found;
for my $n (@{ $rlvr_hello->{names} || [] }) {
    $rlvr_found{$n} = 'call' if !ref $n && $n =~ /\A[A-Za-z_]\w*\z/ && defined &{"main::$n"};
}
print {$rlvr_rep} RlvrWire::line({ names => \%rlvr_found });
while (1) {
    my $msg = RlvrWire::read_line($rlvr_req);
    exit 0 unless ref $msg eq 'HASH';
    my $line = eval {
        my $code = \&{"main::" . $msg->{call}};
        my @args = @{ RlvrWire::decode($msg->{args}) };
        my @r;
        if ($msg->{ctx} eq 'list') { @r = $code->(@args) }
        elsif ($msg->{ctx} eq 'scalar') { $r[0] = scalar $code->(@args) }
        else { $code->(@args) }
        RlvrWire::line({ value => [map { RlvrWire::encode($_) } @r] });
    };
    $line = RlvrWire::line({ raise => [ref $@ || 'die', "$@"] }) unless defined $line;
    print {$rlvr_rep} $line;
}
