# The plain data Perl's two assert-mode processes exchange (issue 49; pl_tests.pl and pl_candidate.pl load it):
# one JSON line a message; undef as null, strings as themselves, numbers tagged {"i": digits} or {"f": "%.17g"}
# (so a float keeps every bit and NaN and infinities cross), {"a": [...]} (an array reference), {"h": {...}}
# (a hash reference), {"r": value} (a scalar reference). Anything else (a blessed object, code, a glob) is
# refused: it never crosses.
package RlvrWire;
use strict;
use warnings;
use B ();
use JSON::PP ();
use Scalar::Util ();

our $MAX_DEPTH = 200;
our $JSON = JSON::PP->new->utf8->allow_nonref;

sub encode {
    my ($v, $depth) = @_;
    $depth //= 0;
    die "containers nested too deep\n" if $depth > $MAX_DEPTH;
    return undef unless defined $v;
    my $r = ref $v;
    if ($r eq '') {
        my $f = B::svref_2object(\$v)->FLAGS;
        return "$v" if ($f & B::SVp_POK) || !($f & (B::SVp_IOK | B::SVp_NOK));
        return { f => sprintf("%.17g", $v) } if $f & B::SVp_NOK;
        return { i => "$v" };
    }
    die "a $r is not plain data\n" if Scalar::Util::blessed($v);
    return { a => [map { encode($_, $depth + 1) } @$v] } if $r eq 'ARRAY';
    return { h => { map { ($_ => encode($v->{$_}, $depth + 1)) } keys %$v } } if $r eq 'HASH';
    return { r => encode($$v, $depth + 1) } if $r eq 'SCALAR' || $r eq 'REF';
    die "a $r reference is not plain data\n";
}

sub decode {
    my ($v, $depth) = @_;
    $depth //= 0;
    die "containers nested too deep\n" if $depth > $MAX_DEPTH;
    return undef unless defined $v;
    return "$v" if ref $v eq '';
    die "not an encoded value\n" unless ref $v eq 'HASH' && keys %$v == 1;
    my ($tag, $x) = %$v;
    if ($tag eq 'i' && !ref $x && $x =~ /\A-?[0-9]+\z/) { return 0 + $x }
    if ($tag eq 'f' && !ref $x && $x =~ /\A(?:[-+]?(?:[0-9.]+(?:e[-+]?[0-9]+)?|inf(?:inity)?|nan))\z/i) { return 0 + $x }
    if ($tag eq 'a' && ref $x eq 'ARRAY') { return [map { decode($_, $depth + 1) } @$x] }
    if ($tag eq 'h' && ref $x eq 'HASH') { return { map { ($_ => decode($x->{$_}, $depth + 1)) } keys %$x } }
    if ($tag eq 'r') { my $y = decode($x, $depth + 1); return \$y }
    die "not an encoded value\n";
}

sub line { return $JSON->encode($_[0]) . "\n" }

sub read_line {
    my ($fh) = @_;
    my $line = <$fh>;
    return undef unless defined $line;
    return $JSON->decode($line);
}

1;
